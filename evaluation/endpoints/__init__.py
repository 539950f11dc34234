"""Model endpoints: the HTTP hot path, the response cap, providers, fleets and the preflight."""
