//! Starting the library server on 127.0.0.1:0 over the tiny fixture model.

use std::sync::Arc;

use k3_engine::EngineOptions;
use k3_runtime::{ModelRequest, Runtime};
use k3_server::{Server, ServerConfig, ServerHandle};

/// A runtime with fixtures/tiny-mxfp4 loaded.
pub fn runtime() -> Arc<Runtime> {
    let runtime = Arc::new(Runtime::start().expect("runtime"));
    let options = EngineOptions::resident(k3_tests::fixture("tiny-mxfp4"), Some(1));
    runtime.open_model(ModelRequest { options, is_demo: false }).expect("open the tiny model");
    runtime
}

/// The default configuration on port 0.
pub fn config() -> ServerConfig {
    ServerConfig { port: 0, ..ServerConfig::default() }
}

/// A server over a fresh runtime.
pub fn start(config: ServerConfig) -> (Arc<Runtime>, ServerHandle) {
    let runtime = runtime();
    let handle = Server::start(runtime.clone(), config).expect("server starts");
    (runtime, handle)
}
