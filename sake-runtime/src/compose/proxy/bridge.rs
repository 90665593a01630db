//! The era bridge of a call: what the upstream asks is asked of the caller, in the caller's
//! era (docs/composition.md, "The era bridge"); its progress and log messages relayed.

use super::*;

impl ProxyInner {
    /// The answerer of one call: each question the upstream asks is asked of the client
    /// through the call's `Context` — a request on its session (handshake), or a question of
    /// an `input_required` round (2026-07-28), after which the call runs again and the same
    /// question, asked again by the upstream, finds its answer. A question of a round keeps
    /// its key; one asked on the call's stream is keyed by its order in the call.
    pub(super) fn answerer(ctx: Context) -> Answerer {
        let asked = Arc::new(AtomicUsize::new(0));
        // When the upstream last asked something in this call.
        let last_question = Arc::new(Mutex::new(tokio::time::Instant::now()));
        // The questions waiting to be asked together.
        let batch: Arc<Mutex<Vec<Waiting>>> = Arc::default();
        Arc::new(move |req: ServerRequest| {
            let ctx = ctx.clone();
            let mut params = req.params;
            // sake's server names a question it asks on a session (`_meta`): the same key as
            // in a round, so that the client sees the question it would see directly.
            let named = params
                .get_mut("_meta")
                .and_then(Value::as_object_mut)
                .and_then(|m| m.remove(INPUT_KEY))
                .and_then(|k| k.as_str().map(str::to_owned));
            if params
                .get("_meta")
                .and_then(Value::as_object)
                .is_some_and(Map::is_empty)
                && let Some(o) = params.as_object_mut()
            {
                o.remove("_meta");
            }
            let key = req.key.clone().or(named).unwrap_or_else(|| {
                format!("upstream-{}", asked.fetch_add(1, Ordering::Relaxed) + 1)
            });
            let method = req.method;
            let from_stream = req.key.is_none();
            if let Ok(mut at) = last_question.lock() {
                *at = tokio::time::Instant::now();
            }
            let last = Arc::clone(&last_question);
            let batch = Arc::clone(&batch);
            Box::pin(async move {
                if !(from_stream && ctx.revision().features().input_required) {
                    return ctx
                        .ask_raw(&key, &method, params)
                        .await
                        .map_err(|e| refused(&method, &e));
                }
                // A session's questions come one message at a time, and a round ends with the
                // questions asked when the call next waits: the ones the upstream asks
                // together (a function awaiting several at once) go in one round. Each waits
                // until none has come for a moment; the first to wake asks every waiting one
                // at once (in one poll), and each gets its own answer.
                let (tx, rx) = tokio::sync::oneshot::channel();
                if let Ok(mut b) = batch.lock() {
                    b.push((key, method, params, tx));
                }
                loop {
                    let Ok(at) = last.lock().map(|at| *at + QUESTION_GRACE) else {
                        break;
                    };
                    if at <= tokio::time::Instant::now() {
                        break;
                    }
                    tokio::time::sleep_until(at).await;
                }
                let waiting = batch.lock().map(|mut b| std::mem::take(&mut *b));
                let asks =
                    futures_util::future::join_all(waiting.unwrap_or_default().into_iter().map(
                        |(key, method, params, tx)| {
                            let ctx = ctx.clone();
                            async move {
                                let answer = ctx
                                    .ask_raw(&key, &method, params)
                                    .await
                                    .map_err(|e| refused(&method, &e));
                                let _ = tx.send(answer);
                            }
                        },
                    ));
                tokio::pin!(asks);
                let mut asks_done = false;
                let mut rx = rx;
                loop {
                    tokio::select! {
                        answer = &mut rx => {
                            return answer.unwrap_or_else(|_| {
                                Err(RpcError::internal("the question was not asked"))
                            });
                        }
                        _ = &mut asks, if !asks_done => asks_done = true,
                    }
                }
            })
        })
    }
}

/// A question of a session upstream waiting to be asked with the others, and where its answer
/// goes.
pub(super) type Waiting = (
    String,
    String,
    Value,
    tokio::sync::oneshot::Sender<Result<Value, RpcError>>,
);

/// How long the questions a handshake upstream asks on its session wait, after the last of
/// them, before they go to a 2026-07-28 caller's round: the questions it asks in the same
/// moment go together.
pub(super) const QUESTION_GRACE: Duration = Duration::from_millis(100);

/// Relays an upstream's notification about a call to the caller: its progress, its log
/// messages (at the level the caller asked for); `None`, the end of the upstream's stream
/// before its answer: this server ends its own (SSE polling; the caller resumes it).
pub(super) async fn relay(ctx: &Context, n: Option<Notification>) {
    let Some(n) = n else {
        ctx.close_stream().await;
        return;
    };
    let p = &n.params;
    match n.method.as_str() {
        "notifications/progress" => {
            let Some(progress) = p.get("progress").and_then(Value::as_f64) else {
                return;
            };
            let total = p.get("total").and_then(Value::as_f64);
            match p.get("message").and_then(Value::as_str) {
                Some(m) => ctx.progress_message(progress, total, m).await,
                None => ctx.progress(progress, total).await,
            }
        }
        "notifications/message" => {
            let Some(level) = p
                .get("level")
                .and_then(|l| serde_json::from_value::<LoggingLevel>(l.clone()).ok())
            else {
                return;
            };
            let logger = p.get("logger").and_then(Value::as_str);
            let data = p.get("data").cloned().unwrap_or(Value::Null);
            ctx.log_as(level, logger, data).await;
        }
        _ => {}
    }
}

/// What the upstream is answered when its question could not be asked or answered.
pub(super) fn refused(method: &str, e: &InputError) -> RpcError {
    match e {
        InputError::MissingCapability { .. } => RpcError::new(
            crate::protocol::jsonrpc::code::METHOD_NOT_FOUND,
            format!("The client cannot answer {method}: {e}"),
        ),
        InputError::Client { code, message } => RpcError::new(
            i32::try_from(*code).unwrap_or(crate::protocol::jsonrpc::code::INTERNAL_ERROR),
            message.clone(),
        ),
        _ => RpcError::internal(format!("{method} was not answered: {e}")),
    }
}

/// Which kinds of question a caller can answer: elicitation forms and URLs, sampling, roots.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) struct Askable(pub(super) u8);

impl Askable {
    pub(super) const FORM: u8 = 1;
    pub(super) const URL: u8 = 2;
    pub(super) const SAMPLING: u8 = 4;
    pub(super) const ROOTS: u8 = 8;
    pub(super) const ALL: Askable = Askable(15);

    pub(super) fn of(caps: &crate::protocol::types::ClientCapabilities) -> Askable {
        let v = askable(caps);
        let mut bits = 0;
        if let Some(e) = v.get("elicitation") {
            let (form, url) = (e.get("form").is_some(), e.get("url").is_some());
            // An empty `elicitation` is form mode.
            if form || !url {
                bits |= Askable::FORM;
            }
            if url {
                bits |= Askable::URL;
            }
        }
        if v.get("sampling").is_some() {
            bits |= Askable::SAMPLING;
        }
        if v.get("roots").is_some() {
            bits |= Askable::ROOTS;
        }
        Askable(bits)
    }
}

/// What of a caller's capabilities an upstream may use through the gateway: what it can ask
/// (elicitation, sampling, roots), and MCP Apps (a view's call of an app-only tool).
pub(super) fn askable(caps: &crate::protocol::types::ClientCapabilities) -> Value {
    let mut out = Map::new();
    if let Ok(Value::Object(all)) = serde_json::to_value(caps) {
        for key in ["elicitation", "sampling", "roots"] {
            if let Some(v) = all.get(key) {
                out.insert(key.into(), v.clone());
            }
        }
        if let Some(apps) = all
            .get("extensions")
            .and_then(|e| e.get(crate::protocol::apps::EXTENSION))
        {
            out.insert(
                "extensions".into(),
                json!({ crate::protocol::apps::EXTENSION: apps }),
            );
        }
    }
    Value::Object(out)
}
