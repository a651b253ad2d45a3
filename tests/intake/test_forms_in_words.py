"""Every field of the owner forms has a label in words, and the sign-up says where a
mail goes when the site prints its mails instead of sending them (`make demo`)."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.test import Client

pytestmark = pytest.mark.django_db


def test_the_register_a_rig_form_labels_every_field_in_words(client: Client) -> None:
    user = User.objects.create_user("o", "o@example.org", "a long enough password 42")
    client.force_login(user)
    html = client.get("/me/rigs/new/").content.decode()
    form = html.split('id="rig-form"', 1)[1].split("</form>", 1)[0]
    labels = [re.sub(r"<[^>]+>", "", label).strip() for label in re.findall(r"<label[^>]*>(.*?)</label>", form, re.S)]
    assert {"GPUs:", "RAM (GB):", "Operating system:", "CPU:", "Rig name:"} <= set(labels), labels
    for label in labels:  # no model field name read as words ("Ram gb", "Os", "Gpus")
        assert label[0].isupper() and "_" not in label and label not in ("Gpus:", "Ram gb:", "Os:"), label
    gpus = re.search(r"<textarea[^>]*name=\"gpus\"[^>]*>", form).group(0)
    assert int(re.search(r'rows="(\d+)"', gpus).group(1)) >= 3  # one group per line: room for several
    assert 'class="stacked-form"' in html


@pytest.mark.parametrize(
    ("backend", "hint"),
    [("django.core.mail.backends.console.EmailBackend", True), ("django.core.mail.backends.smtp.EmailBackend", False)],
)
def test_the_confirmation_page_says_where_a_printed_mail_is(client: Client, settings, backend: str, hint: bool) -> None:
    settings.EMAIL_BACKEND = backend
    html = client.get("/accounts/confirm-email/").content.decode()
    assert "Confirm your email address" in html
    assert ('id="mail-printed-here"' in html) is hint
