//! The accept loop: HTTP/1.1 connections served by hyper with a header read timeout
//! (slowloris, AP-11) and a cap on open connections.
//!
//! Owns: one task per connection, each holding a connection slot; a connection over the
//! cap is closed on accept; hyper's `header_read_timeout` closes a client that has not
//! sent a whole request head in time (an idle keep-alive connection too); on shutdown
//! the loop stops accepting and every connection task is aborted.
//! Must not: serve HTTP/2 (no `Host` header there; the guard is written for HTTP/1).

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinSet;
use tower::ServiceExt;

use crate::routes::Peer;

/// The limits of the accept loop.
#[derive(Debug, Clone, Copy)]
pub struct ConnLimits {
    pub header_read_timeout: Duration,
    pub max_connections: usize,
}

/// Serves `listener` until `shutdown` turns true.
pub async fn serve(listener: TcpListener, app: Router, limits: ConnLimits, mut shutdown: watch::Receiver<bool>) {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            _ = shutdown.changed() => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    // Over the cap: dropping the stream closes it.
                    let Ok(slot) = slots.clone().try_acquire_owned() else { continue };
                    let app = app.clone();
                    connections.spawn(async move {
                        serve_connection(stream, Peer(peer), app, limits.header_read_timeout).await;
                        drop(slot);
                    });
                }
                // Out of file descriptors and the like: wait instead of spinning.
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            },
        }
    }
    connections.shutdown().await;
}

async fn serve_connection(stream: TcpStream, peer: Peer, app: Router, header_read_timeout: Duration) {
    let _ = stream.set_nodelay(true);
    let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
        request.extensions_mut().insert(peer);
        app.clone().oneshot(request)
    });
    let connection = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(header_read_timeout)
        .max_buf_size(64 << 10)
        .serve_connection(TokioIo::new(stream), service);
    // A client error (a reset, a timeout) ends only its own connection.
    let _ = connection.await;
}
