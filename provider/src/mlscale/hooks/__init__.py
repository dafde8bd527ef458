"""AWS hooks mlscale adds where the Amazon provider has none."""
