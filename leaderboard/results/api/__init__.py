"""The REST API: one view class per operation, serializers, filters, errors."""
