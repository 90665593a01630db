use sake::prelude::*;

/// On a prompt, `layer` is not an option (Server::layer_for takes one for a prompt).
#[prompt(layer = sake::middleware::Audit::new())]
fn hello() -> String {
    "hi".into()
}

fn main() {}
