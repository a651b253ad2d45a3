"""Serializers shared by the API views: inputs (what a rig sends) and outputs (what everyone reads)."""
