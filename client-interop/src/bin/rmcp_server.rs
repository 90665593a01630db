//! The rmcp test server over stdio, for sake's client stdio tests.

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    sake_client_interop::serve_stdio().await
}
