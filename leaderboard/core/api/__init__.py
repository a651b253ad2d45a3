"""API pieces every app's views share: the error body shape and its exception handler, pagination."""
