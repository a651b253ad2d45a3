"""One API class per operation (HackSoft style); URLs in api/urls.py."""
