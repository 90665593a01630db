//! The token endpoint: client authentication, the DPoP proof, and the grants (authorization
//! code, refresh token, JWT bearer) that end in the proxy's tokens.

use super::*;

/// What authenticated the client at the token endpoint.
struct Authenticated {
    client: KnownClient,
}

impl Inner {
    /// Authenticates the client of a token request (RFC 6749 section 2.3): `Basic`, the form's
    /// `client_secret`, or a public client's `client_id`.
    async fn authenticate_client(
        &self,
        headers: &HeaderMap,
        pairs: &[(String, String)],
    ) -> Result<Authenticated, Response> {
        let invalid = |why: &str| {
            let mut r = oauth_error(StatusCode::UNAUTHORIZED, "invalid_client", why);
            r.headers_mut().insert(
                http::header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Basic realm=\"token\""),
            );
            r
        };
        let basic = headers
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                v.strip_prefix("Basic ")
                    .or_else(|| v.strip_prefix("basic "))
            })
            .map(|b| {
                base64::engine::general_purpose::STANDARD
                    .decode(b.trim())
                    .ok()
                    .and_then(|d| String::from_utf8(d).ok())
                    .and_then(|s| {
                        let (id, secret) = s.split_once(':')?;
                        let dec = |x: &str| form_decode(&format!("x={x}")).pop().map(|(_, v)| v);
                        Some((dec(id)?, dec(secret)?))
                    })
            });
        let (id, secret) = match basic {
            Some(None) => return Err(invalid("the Basic credentials are malformed")),
            Some(Some((id, secret))) => {
                if param(pairs, "client_secret").is_some() {
                    return Err(bad_request(
                        "invalid_request",
                        "the client authenticated twice (Basic and client_secret)",
                    ));
                }
                if param(pairs, "client_id").is_some_and(|f| f != id) {
                    return Err(bad_request(
                        "invalid_request",
                        "client_id does not match the Basic credentials",
                    ));
                }
                (id, Some(secret))
            }
            None => match param(pairs, "client_id") {
                Some(id) => (
                    id.to_owned(),
                    param(pairs, "client_secret").map(str::to_owned),
                ),
                None => {
                    return Err(invalid(
                        "the request names no client (client_id or Basic credentials)",
                    ));
                }
            },
        };
        let client = self.client(&id).await.map_err(|e| invalid(&e))?;
        let expected = match client.kind {
            Kind::Configured => client.secret.clone(),
            Kind::Registered if client.method != Method::None => {
                Some(self.client_secret(&client.id))
            }
            _ => None,
        };
        match (expected, secret) {
            (Some(e), Some(s)) if constant_eq(e.as_bytes(), s.as_bytes()) => {}
            (Some(_), _) => return Err(invalid("the client's credentials are wrong or missing")),
            (None, None) => {}
            (None, Some(_)) => return Err(invalid("this client is public: it has no secret")),
        }
        Ok(Authenticated { client })
    }

    /// The proof of possession of a token request (its `DPoP` header), if any: checked, not
    /// yet recorded (that waits for the grant it accompanies to check out).
    #[allow(clippy::result_large_err)] // The refusal is the response itself.
    fn token_dpop(&self, headers: &HeaderMap) -> Result<Option<dpop::Checked>, Response> {
        let mut proofs = headers.get_all(DPOP).iter();
        let Some(proof) = proofs.next() else {
            return Ok(None);
        };
        if proofs.next().is_some() {
            return Err(bad_request(
                "invalid_dpop_proof",
                "more than one DPoP header",
            ));
        }
        let proof = proof
            .to_str()
            .map_err(|_| bad_request("invalid_dpop_proof", "the DPoP header is not ASCII"))?;
        self.dpop
            .check(proof, "POST", &self.url("/oauth/token"), None)
            .map(Some)
            .map_err(|e| bad_request(e.code(), e.reason()))
    }

    /// The tokens answer: an access token (bound to `jkt` when given) and, when given, a
    /// refresh token.
    #[allow(clippy::too_many_arguments)]
    async fn issue(
        &self,
        subject: &str,
        client: &KnownClient,
        scopes: &[String],
        gid: Option<&str>,
        claims: &serde_json::Map<String, Value>,
        proof: Option<&dpop::Checked>,
        refresh: Option<String>,
    ) -> Response {
        // The proof is remembered (against its replay) only now that the grant checked out.
        if let Some(c) = proof
            && let Err(e) = self.dpop.record(c)
        {
            return bad_request(e.code(), e.reason());
        }
        let jkt = proof.map(|c| c.jkt.as_str());
        let access = match self.access_token(subject, &client.id, scopes, gid, claims, jkt) {
            Ok(a) => a,
            Err(e) => {
                tracing::error!(error = %e, "cannot issue an access token");
                return oauth_error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "server_error",
                    "cannot issue a token",
                );
            }
        };
        let mut answer = json!({
            "access_token": access,
            "token_type": if jkt.is_some() { "DPoP" } else { "Bearer" },
            "expires_in": self.access_ttl.as_secs(),
            "scope": scopes.join(" "),
        });
        if let Some(token) = refresh {
            answer["refresh_token"] = json!(token);
        }
        let mut r = no_store(json_response(StatusCode::OK, &answer));
        if jkt.is_some() {
            CorsHeaders {
                expose: Some("dpop-nonce"),
                ..CorsHeaders::ORIGIN_ONLY
            }
            .allow_any_origin(r.headers_mut());
        }
        r
    }

    /// Ends a grant (a code or a refresh token was used twice: someone else holds a copy).
    pub(super) async fn revoke(&self, gid: &str) {
        tracing::warn!("a code or refresh token was used twice: its grant is revoked");
        // The mark first, then the grant: a refresh that writes the grant back meanwhile finds
        // the mark after its write and ends the grant itself (`save_refreshed`).
        let _ = self
            .store
            .put(&revoked_key(gid), b"1".to_vec(), ttl(self.refresh_ttl))
            .await;
        let _ = self.store.delete(&grant_key(gid)).await;
    }

    /// Stores a refreshed grant unless it was revoked meanwhile: `Some(true)` stored,
    /// `Some(false)` revoked (and gone), `None` the store failed.
    pub(super) async fn save_refreshed(&self, gid: &str, grant: &Grant) -> Option<bool> {
        if !self.save_grant(gid, grant).await {
            return None;
        }
        match self.store.get(&revoked_key(gid)).await {
            Ok(None) => Some(true),
            Ok(Some(_)) => {
                let _ = self.store.delete(&grant_key(gid)).await;
                Some(false)
            }
            Err(_) => None,
        }
    }
}

pub(super) async fn token(State(p): State<Arc<Inner>>, request: Request) -> Response {
    let headers = request.headers().clone();
    // A proof counts against its client's share of the replay cache.
    let network = client_addr(request.extensions())
        .map(|(ip, prefix)| crate::limits::client_network(ip, prefix));
    let form = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';').next().is_some_and(|m| {
                m.trim()
                    .eq_ignore_ascii_case("application/x-www-form-urlencoded")
            })
        });
    if !form {
        return bad_request(
            "invalid_request",
            "send the token request as application/x-www-form-urlencoded",
        );
    }
    let body = match read_body(request.into_body(), MAX_TOKEN_REQUEST).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    let pairs = match params(&String::from_utf8_lossy(&body)) {
        Ok(x) => x,
        Err(e) => return bad_request("invalid_request", &e),
    };
    let auth = match p.authenticate_client(&headers, &pairs).await {
        Ok(a) => a,
        Err(r) => return r,
    };
    let client = auth.client;
    let jkt = match p.token_dpop(&headers) {
        Ok(j) => j.map(|c| c.sent_by(network)),
        Err(r) => return r,
    };
    if let Some(r) = param(&pairs, "resource")
        && r != p.resource
    {
        return bad_request(
            "invalid_target",
            &format!(
                "this authorization server issues tokens only for {}",
                p.resource
            ),
        );
    }
    let grant_type = param(&pairs, "grant_type").unwrap_or_default();
    if !client.grant_types.iter().any(|g| g == grant_type)
        && client.kind != Kind::MetadataDocument
        && p.grant_types().contains(&grant_type)
    {
        return bad_request(
            "unauthorized_client",
            "the client did not register this grant type",
        );
    }
    match grant_type {
        "authorization_code" => code_grant(&p, &client, &pairs, jkt).await,
        "refresh_token" => refresh_grant(&p, &client, &pairs, jkt).await,
        JWT_BEARER if p.idp.is_some() => jwt_bearer_grant(&p, &client, &pairs, jkt).await,
        "" => bad_request("invalid_request", "the request names no grant_type"),
        other => bad_request(
            "unsupported_grant_type",
            &format!("the grant type {} is not supported", clip(other)),
        ),
    }
}

async fn code_grant(
    p: &Inner,
    client: &KnownClient,
    pairs: &[(String, String)],
    proof: Option<dpop::Checked>,
) -> Response {
    let jkt = proof.as_ref().map(|c| c.jkt.clone());
    let invalid_grant = |why: &str| bad_request("invalid_grant", why);
    let Some(code) = param(pairs, "code") else {
        return bad_request("invalid_request", "the request has no code");
    };
    let key = digest(code);
    let record: Code = match p.store.take(&format!("code:{key}")).await {
        Ok(Some(b)) => match serde_json::from_slice(&b) {
            Ok(r) => r,
            Err(_) => return invalid_grant("the code is unknown"),
        },
        Ok(None) => {
            // Used before? Then whoever used it first may not be the client: end the grant.
            if let Ok(Some(gid)) = p.store.get(&format!("used-code:{key}")).await {
                p.revoke(&String::from_utf8_lossy(&gid)).await;
                return invalid_grant(
                    "the code was used before; the tokens issued with it are revoked",
                );
            }
            return invalid_grant("the code is unknown, expired or used");
        }
        Err(_) => {
            return oauth_error(
                StatusCode::SERVICE_UNAVAILABLE,
                "temporarily_unavailable",
                "the authorization server is busy",
            );
        }
    };
    let _ = p
        .store
        .put(
            &format!("used-code:{key}"),
            record.grant.as_bytes().to_vec(),
            ttl(p.sign_in_ttl),
        )
        .await;
    if record.client_id != client.id {
        return invalid_grant("the code was issued to another client");
    }
    if param(pairs, "redirect_uri") != Some(record.redirect_uri.as_str()) {
        return invalid_grant("redirect_uri is not the one of the authorization request");
    }
    let Some(verifier) = param(pairs, "code_verifier") else {
        return invalid_grant("the request has no code_verifier (PKCE)");
    };
    if verifier.len() < 43
        || verifier.len() > 128
        || !constant_eq(s256(verifier).as_bytes(), record.code_challenge.as_bytes())
    {
        return invalid_grant("the code_verifier does not match the code_challenge (PKCE)");
    }
    if let Err(r) = bound_to(
        record.dpop_jkt.as_deref(),
        jkt.as_deref(),
        "the code is bound to a DPoP key (dpop_jkt): prove possession of it",
    ) {
        return r;
    }
    let mut grant = match p.load_grant(&record.grant).await {
        Ok(Some(g)) => g,
        _ => return invalid_grant("the sign-in behind the code ended"),
    };
    let mut refresh = None;
    if client.grant_types.iter().any(|g| g == "refresh_token") {
        // The grant's first refresh token: generation 0, bound to the DPoP key of a public
        // client (RFC 9449 section 5).
        grant.refresh = Some(RefreshState {
            generation: 0,
            jkt: if client.method == Method::None {
                jkt.clone()
            } else {
                None
            },
        });
        if !p.save_grant(&record.grant, &grant).await {
            return busy();
        }
        refresh = Some(p.refresh_token(&record.grant, 0));
    }
    p.issue_for_grant(
        &record.grant,
        &grant,
        client,
        &grant.scopes,
        proof.as_ref(),
        refresh,
    )
    .await
}

/// Refuses a request whose DPoP key is not the one its code or refresh token is bound to
/// (`bound`), saying `why`.
#[allow(clippy::result_large_err)] // The refusal is the response itself.
fn bound_to(bound: Option<&str>, jkt: Option<&str>, why: &str) -> Result<(), Response> {
    match bound {
        Some(b) if jkt != Some(b) => Err(bad_request("invalid_dpop_proof", why)),
        _ => Ok(()),
    }
}

impl Inner {
    /// The grant `gid`: `Ok(None)` when it ended (or its record does not verify).
    async fn load_grant(
        &self,
        gid: &str,
    ) -> Result<Option<Grant>, crate::auth::proxy::ProxyStoreError> {
        Ok(self
            .store
            .get(&grant_key(gid))
            .await?
            .and_then(|b| self.parse_grant(gid, &b)))
    }

    /// The tokens answer of an upstream user's grant (the code and refresh grants): `scopes`
    /// of it, for `client`.
    async fn issue_for_grant(
        &self,
        gid: &str,
        grant: &Grant,
        client: &KnownClient,
        scopes: &[String],
        proof: Option<&dpop::Checked>,
        refresh: Option<String>,
    ) -> Response {
        self.issue(
            &issued_subject(Origin::Upstream, &grant.subject),
            client,
            scopes,
            Some(gid),
            &grant.claims,
            proof,
            refresh,
        )
        .await
    }
}

/// The token endpoint's answer when the store cannot be used.
fn busy() -> Response {
    oauth_error(
        StatusCode::SERVICE_UNAVAILABLE,
        "temporarily_unavailable",
        "the authorization server is busy",
    )
}

impl Inner {
    /// Stores a grant for the refresh tokens' lifetime; `false` when the store refused.
    async fn save_grant(&self, gid: &str, grant: &Grant) -> bool {
        let Ok(bytes) = self.grant_bytes(gid, grant) else {
            return false;
        };
        match self
            .store
            .put(&grant_key(gid), bytes, ttl(self.refresh_ttl))
            .await
        {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(error = %e, "cannot keep a grant");
                false
            }
        }
    }
}

async fn refresh_grant(
    p: &Inner,
    client: &KnownClient,
    pairs: &[(String, String)],
    proof: Option<dpop::Checked>,
) -> Response {
    let Some(token) = param(pairs, "refresh_token") else {
        return bad_request("invalid_request", "the request has no refresh_token");
    };
    let Some((gid, generation)) = p.parse_refresh_token(token) else {
        return bad_request(
            "invalid_grant",
            "the refresh token is unknown, expired or used",
        );
    };
    // One refresh of a grant at a time: the grant moves from one generation to the next once.
    let lock = refreshing_key(&gid);
    match p
        .store
        .insert_new(&lock, b"1".to_vec(), REFRESH_LOCK_TTL)
        .await
    {
        Ok(true) => {}
        Ok(false) => {
            return bad_request(
                "invalid_grant",
                "another refresh of this sign-in is under way; use the refresh token it returns",
            );
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot refresh a grant");
            return busy();
        }
    }
    let answer = refresh_locked(p, client, pairs, proof, &gid, generation).await;
    let _ = p.store.delete(&lock).await;
    answer
}

/// How long a refresh holds its grant's lock at most (a replica that dies holding it).
const REFRESH_LOCK_TTL: std::time::Duration = std::time::Duration::from_secs(10);

/// A refresh of generation `generation` of grant `gid`, holding its lock.
async fn refresh_locked(
    p: &Inner,
    client: &KnownClient,
    pairs: &[(String, String)],
    proof: Option<dpop::Checked>,
    gid: &str,
    generation: u64,
) -> Response {
    let jkt = proof.as_ref().map(|c| c.jkt.clone());
    let invalid_grant = |why: &str| bad_request("invalid_grant", why);
    let mut grant = match p.load_grant(gid).await {
        Ok(Some(g)) => g,
        Ok(None) => return invalid_grant("the sign-in ended; sign in again"),
        Err(e) => {
            tracing::warn!(error = %e, "cannot read a grant");
            return busy();
        }
    };
    let Some(state) = grant.refresh.clone() else {
        return invalid_grant("the refresh token is unknown, expired or used");
    };
    if generation < state.generation {
        // An older token: whoever used its successor may not be the client.
        p.revoke(gid).await;
        return invalid_grant(
            "the refresh token was used before (it is rotated at each use); the sign-in is revoked",
        );
    }
    if generation > state.generation {
        return invalid_grant("the refresh token is unknown, expired or used");
    }
    if grant.client_id != client.id {
        return invalid_grant("the refresh token was issued to another client");
    }
    if let Err(r) = bound_to(
        state.jkt.as_deref(),
        jkt.as_deref(),
        "the refresh token is bound to a DPoP key: prove possession of it",
    ) {
        return r;
    }
    // The policy again: a user who lost a scope loses it now.
    let allowed = p.policy.filter(
        &UpstreamUser::new(&grant.subject, &grant.claims),
        &grant.scopes,
    );
    let scopes = match p.granted_scopes(param(pairs, "scope"), Some(&allowed)) {
        Ok(s) => s,
        Err(e) => return bad_request("invalid_scope", &e),
    };
    // The next generation; the grant lives as long as its newest refresh token.
    let next = generation + 1;
    grant.refresh = Some(RefreshState {
        generation: next,
        jkt: state.jkt,
    });
    match p.save_refreshed(gid, &grant).await {
        Some(true) => {}
        Some(false) => return invalid_grant("the sign-in ended; sign in again"),
        None => return busy(),
    }
    p.issue_for_grant(
        gid,
        &grant,
        client,
        &scopes,
        proof.as_ref(),
        Some(p.refresh_token(gid, next)),
    )
    .await
}

/// Enterprise-managed authorization: an ID-JAG of the trusted identity provider, presented
/// with the JWT bearer grant (RFC 7523), gives a token without a browser.
async fn jwt_bearer_grant(
    p: &Inner,
    client: &KnownClient,
    pairs: &[(String, String)],
    proof: Option<dpop::Checked>,
) -> Response {
    let invalid_grant = |why: &str| bad_request("invalid_grant", why);
    let Some(idp) = &p.idp else {
        return bad_request("unsupported_grant_type", "no identity provider is trusted");
    };
    if client.method == Method::None {
        return bad_request(
            "unauthorized_client",
            "the JWT bearer grant is for confidential clients (authenticate the client)",
        );
    }
    let Some(assertion) = param(pairs, "assertion") else {
        return bad_request("invalid_request", "the request has no assertion");
    };
    let principal = match crate::auth::TokenVerifier::verify(idp, assertion).await {
        Ok(pr) => pr,
        Err(e) if e.is_token_error() => {
            return invalid_grant(&format!("the assertion was refused: {e}"));
        }
        Err(e) => {
            tracing::warn!(error = %e, "the identity provider's keys cannot be read");
            return oauth_error(
                StatusCode::SERVICE_UNAVAILABLE,
                "temporarily_unavailable",
                "the identity provider cannot be reached",
            );
        }
    };
    let claims = principal.claims();
    let names_resource = match claims.get("resource") {
        Some(Value::String(r)) => *r == p.resource,
        Some(Value::Array(a)) => a.iter().any(|r| r.as_str() == Some(p.resource.as_str())),
        _ => false,
    };
    if !names_resource {
        return invalid_grant(&format!(
            "the assertion is not for the resource {}",
            p.resource
        ));
    }
    if claims.get("client_id").and_then(Value::as_str) != Some(client.id.as_str()) {
        return invalid_grant("the assertion was issued for another client");
    }
    if !claims.contains_key("sub") {
        return invalid_grant("the assertion names no subject");
    }
    let Some(jti) = claims.get("jti").and_then(Value::as_str) else {
        return invalid_grant("the assertion has no jti");
    };
    let exp = claims.get("exp").and_then(Value::as_u64).unwrap_or(0);
    let remaining = std::time::Duration::from_secs(exp.saturating_sub(now()) + 60);
    let jti_key = format!(
        "jag:{}",
        digest(&format!(
            "{}\n{jti}",
            principal.issuer().unwrap_or_default()
        ))
    );
    match p
        .store
        .insert_new(&jti_key, b"1".to_vec(), ttl(remaining))
        .await
    {
        Ok(true) => {}
        Ok(false) => return invalid_grant("the assertion was used before"),
        Err(_) => {
            return oauth_error(
                StatusCode::SERVICE_UNAVAILABLE,
                "temporarily_unavailable",
                "the authorization server is busy",
            );
        }
    }
    let asserted: Vec<String> = principal.scopes().iter().cloned().collect();
    let scopes = match p.granted_scopes(
        param(pairs, "scope")
            .or(Some(&asserted.join(" ")))
            .filter(|s| !s.is_empty()),
        Some(&asserted),
    ) {
        Ok(s) => s,
        Err(e) => return bad_request("invalid_scope", &e),
    };
    let scopes = p
        .policy
        .filter(&UpstreamUser::new(principal.subject(), claims), &scopes);
    tracing::info!(client_id = %clip(&client.id), "a token was issued for an enterprise assertion");
    p.issue(
        &issued_subject(Origin::IdJag, principal.subject()),
        client,
        &scopes,
        None,
        &serde_json::Map::new(),
        proof.as_ref(),
        None,
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::proxy::{AuthProxy, Upstream};

    async fn answer(r: Response) -> (StatusCode, Value) {
        let status = r.status();
        let body = axum::body::to_bytes(r.into_body(), usize::MAX)
            .await
            .unwrap();
        (status, serde_json::from_slice(&body).unwrap())
    }

    /// One refresh of a grant at a time: a second one while the first holds the grant's lock
    /// is refused, and the lock is given back after each.
    #[tokio::test]
    async fn a_second_refresh_of_a_grant_at_once_is_refused() {
        let proxy = AuthProxy::builder(
            "http://127.0.0.1:3000",
            "/mcp",
            Upstream::oidc("http://127.0.0.1:9", "id", "secret"),
        )
        .build()
        .unwrap();
        let p = &proxy.inner;
        let client = KnownClient {
            id: "c".into(),
            name: None,
            redirect_uris: vec![],
            method: Method::None,
            grant_types: vec!["refresh_token".into()],
            kind: Kind::Registered,
            secret: None,
        };
        let pairs = vec![
            ("grant_type".to_owned(), "refresh_token".to_owned()),
            ("refresh_token".to_owned(), p.refresh_token("g", 0)),
        ];
        // Another refresh of grant `g` holds its lock.
        let lock = refreshing_key("g");
        assert!(
            p.store
                .insert_new(&lock, b"1".to_vec(), REFRESH_LOCK_TTL)
                .await
                .unwrap()
        );
        let (status, e) = answer(refresh_grant(p, &client, &pairs, None).await).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(
            e,
            json!({"error": "invalid_grant", "error_description": "another refresh of this sign-in is under way; use the refresh token it returns"})
        );
        // Its lock given back, the refresh goes on (to a grant that does not exist here), and
        // gives the lock back in turn.
        p.store.delete(&lock).await.unwrap();
        let (status, e) = answer(refresh_grant(p, &client, &pairs, None).await).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(e["error_description"], "the sign-in ended; sign in again");
        assert_eq!(p.store.get(&lock).await.unwrap(), None);
    }
}
