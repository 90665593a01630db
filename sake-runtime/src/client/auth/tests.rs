//! Tests of the authorization flow against fake authorization and MCP servers.
