"""Serializers shared by the API views: what everyone reads (outputs);
what a rig sends is runners/delivery/schema.py."""
