"""The graph executor and its node kinds."""
