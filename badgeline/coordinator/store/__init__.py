"""The only code that speaks Redis: keys, Lua scripts, the connection and typed records."""
