"""Reads for the HTML pages; each issues a fixed number of queries."""
