"""The coordinator: HTTP API, Redis store and the controllers that keep jobs moving."""
