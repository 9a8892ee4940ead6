"""The wire contract that the coordinator, the agents and kiosks share.

Import from the submodules: `models` (every JSON body), `agent_models` (the
agent API's bodies alone, which is all an agent loads), `errors`, `ids`,
`states`. Nothing is imported here, so that an agent importing one of them
does not build every model.
"""
