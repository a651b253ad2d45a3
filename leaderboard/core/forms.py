"""Form settings every admin shares."""

from __future__ import annotations

from typing import Any

from django.db import models

# A URL typed without a scheme gets http://, as it always has. Django 6 turns the
# default to https; saying it here keeps the admin's behaviour and its forms
# free of the RemovedInDjango60Warning. For ModelAdmin.formfield_overrides.
URL_FIELD_OVERRIDES: dict[type[models.Field[Any, Any]], dict[str, Any]] = {models.URLField: {"assume_scheme": "http"}}
