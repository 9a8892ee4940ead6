"""HTTP and nothing else: routes, middlewares, auth, limits, the dashboard, OpenAPI, metrics."""
