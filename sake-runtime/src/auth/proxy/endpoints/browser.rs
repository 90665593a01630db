//! The browser's way through the proxy: the authorization request (a sign-in under way,
//! bounded per client address, per IPv6 /48 and in all), the consent form, and the upstream's
//! callback that turns an approved sign-in into a code.

use super::*;

pub(super) async fn authorize(State(p): State<Arc<Inner>>, request: Request) -> Response {
    let query = request.uri().query().unwrap_or_default().to_owned();
    let pairs = match params(&query) {
        Ok(x) => x,
        Err(e) => return error_page(StatusCode::BAD_REQUEST, "Invalid authorization request", &e),
    };
    let Some(client_id) = param(&pairs, "client_id") else {
        return error_page(
            StatusCode::BAD_REQUEST,
            "Invalid authorization request",
            "The request names no client (client_id).",
        );
    };
    let client = match p.client(client_id).await {
        Ok(c) => c,
        Err(e) => {
            tracing::info!(client_id = %clip(client_id), reason = %e, "an authorization request for an unknown client");
            return error_page(StatusCode::BAD_REQUEST, "Unknown application", &e);
        }
    };
    // The redirect URI, exactly as registered (never a prefix, never a pattern); only a
    // client with one may leave it out.
    let redirect_uri = match param(&pairs, "redirect_uri") {
        Some(r) if client.redirect_uris.iter().any(|u| u == r) => r.to_owned(),
        None if client.redirect_uris.len() == 1 => client.redirect_uris[0].clone(),
        Some(r) => {
            tracing::info!(client_id = %clip(client_id), redirect_uri = %clip(r), "an unregistered redirect URI");
            return error_page(
                StatusCode::BAD_REQUEST,
                "Invalid redirect URI",
                "The address the application wants you sent back to is not one it registered. You were not sent anywhere.",
            );
        }
        None => {
            return error_page(
                StatusCode::BAD_REQUEST,
                "Invalid authorization request",
                "The request names no redirect_uri, and the application registered several.",
            );
        }
    };
    let state = param(&pairs, "state").map(str::to_owned);
    let fail = |code: &str, description: &str| {
        let mut q = vec![("error", code), ("error_description", description)];
        if let Some(s) = &state {
            q.push(("state", s));
        }
        q.push(("iss", &p.issuer));
        redirect(StatusCode::FOUND, &with_query(&redirect_uri, &q))
    };
    if state.as_ref().is_some_and(|s| s.len() > MAX_STATE) {
        return fail("invalid_request", "state is too long");
    }
    if param(&pairs, "response_type") != Some("code") {
        return fail(
            "unsupported_response_type",
            "only response_type=code is supported",
        );
    }
    if !client.grant_types.iter().any(|g| g == "authorization_code") {
        return fail(
            "unauthorized_client",
            "the client did not register the authorization code grant",
        );
    }
    let Some(code_challenge) = param(&pairs, "code_challenge") else {
        return fail(
            "invalid_request",
            "PKCE is required: send code_challenge with code_challenge_method=S256",
        );
    };
    if param(&pairs, "code_challenge_method") != Some("S256") {
        return fail(
            "invalid_request",
            "only the PKCE method S256 is supported (code_challenge_method=S256)",
        );
    }
    if code_challenge.len() != 43
        || !code_challenge
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return fail(
            "invalid_request",
            "code_challenge is not a Base64url SHA-256 (43 characters)",
        );
    }
    if let Some(r) = param(&pairs, "resource")
        && r != p.resource
    {
        return fail(
            "invalid_target",
            &format!(
                "this authorization server issues tokens only for {}",
                p.resource
            ),
        );
    }
    let scopes = match p.granted_scopes(param(&pairs, "scope"), None) {
        Ok(s) => s,
        Err(e) => return fail("invalid_scope", &e),
    };
    let dpop_jkt = param(&pairs, "dpop_jkt").map(str::to_owned);
    if dpop_jkt.as_ref().is_some_and(|j| j.len() != 43) {
        return fail(
            "invalid_request",
            "dpop_jkt is not a JWK SHA-256 thumbprint",
        );
    }
    let (cookie, fresh) = match p.browser_cookie(request.headers()) {
        Some(c) => (c, false),
        None => match random(24) {
            Ok(c) => (c, true),
            Err(_) => return fail("server_error", "no randomness"),
        },
    };
    let (Ok(id), Ok(csrf)) = (random(24), random(24)) else {
        return fail("server_error", "no randomness");
    };
    let sign_in = SignIn {
        client_id: client.id.clone(),
        redirect_uri: redirect_uri.clone(),
        state: state.clone(),
        code_challenge: code_challenge.to_owned(),
        scopes: scopes.clone(),
        browser: digest(&cookie),
        csrf: csrf.clone(),
        approved: false,
        dpop_jkt,
        upstream_verifier: None,
        nonce: None,
    };
    match p
        .start_sign_in(&id, &sign_in, client_addr(request.extensions()))
        .await
    {
        Ok(Started::Yes) => {}
        Ok(Started::ClientFull) => {
            tracing::debug!(client_id = %clip(client_id), "a sign-in was refused: its client address has the most sign-ins under way");
            return fail(
                "temporarily_unavailable",
                &format!(
                    "too many sign-ins are under way from your network address (at most {}, each ending when finished or after 10 minutes); finish one or try again later",
                    p.max_pending_per_client
                ),
            );
        }
        Ok(Started::NetworkFull) => {
            tracing::info!(client_id = %clip(client_id), "a sign-in was refused: its IPv6 /48 has the most sign-ins under way");
            return fail(
                "temporarily_unavailable",
                &format!(
                    "too many sign-ins are under way from your network (an IPv6 /48: at most {}, each ending when finished or after 10 minutes); try again later",
                    p.max_pending_per_network
                ),
            );
        }
        Ok(Started::AllFull) => {
            tracing::warn!(
                max = p.max_pending,
                "a sign-in was refused: the most sign-ins are under way (AuthProxyBuilder::max_pending_sign_ins)"
            );
            return fail(
                "temporarily_unavailable",
                "too many sign-ins are under way on this server; try again in a few minutes",
            );
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot keep a sign-in");
            return fail(
                "temporarily_unavailable",
                "the authorization server is busy; try again shortly",
            );
        }
    }
    let name = printable(&client.name.clone().unwrap_or_else(|| client.id.clone()));
    let kind = match client.kind {
        Kind::Registered => "registered itself with this server; its name is not verified",
        Kind::MetadataDocument => {
            "described by its metadata document at the client id below; its name is not verified"
        }
        Kind::Configured => "configured by the server's operator",
    };
    let server = p
        .resource_name
        .clone()
        .unwrap_or_else(|| p.resource.clone());
    let scope_list: Vec<String> = if scopes.is_empty() {
        vec!["basic access (no particular scope)".to_owned()]
    } else {
        scopes.clone()
    };
    let action = p.url("/oauth/consent");
    let body = html::page(
        html::CONSENT,
        &[
            ("client", Slot::Text(&name)),
            ("client_id", Slot::Text(&clip_long(&client.id))),
            ("kind", Slot::Text(kind)),
            ("redirect_uri", Slot::Text(&redirect_uri)),
            ("scopes", Slot::Items(&scope_list)),
            ("resource", Slot::Text(&p.resource)),
            ("server", Slot::Text(&server)),
            ("request", Slot::Text(&id)),
            ("csrf", Slot::Text(&csrf)),
            ("action", Slot::Text(&action)),
        ],
    );
    let mut r = page(StatusCode::OK, body);
    if fresh && let Some(c) = p.set_cookie(&cookie) {
        r.headers_mut().insert(SET_COOKIE, c);
    }
    r
}

/// A client id for the page: whole (a metadata document's URL is told apart by its end), up
/// to 2048 characters, without control or bidirectional formatting characters.
pub(super) fn clip_long(id: &str) -> String {
    let id = printable(id);
    if id.chars().count() > 2048 {
        format!("{}…", id.chars().take(2047).collect::<String>())
    } else {
        id
    }
}

/// Text from a client for the page, without control characters nor the bidirectional
/// formatting ones that would make it read as something else (`U+202E` turning
/// `evil.com/moc.elgoog` around).
pub(super) fn printable(text: &str) -> String {
    text.chars()
        .filter(|c| {
            !c.is_control()
                && !matches!(
                    c,
                    '\u{200E}' | '\u{200F}' | '\u{061C}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
                )
        })
        .collect()
}

/// Whether a sign-in could start.
enum Started {
    Yes,
    /// Its client's address has `max_pending_per_client` under way.
    ClientFull,
    /// Its IPv6 /48 has `max_pending_per_network` under way.
    NetworkFull,
    /// `max_pending` are under way.
    AllFull,
}

/// The store's count of every sign-in under way.
const PENDING: &str = "pending";

impl Inner {
    /// Keeps a new sign-in, counted in all and under its client's address (the address is
    /// keyed: the store never holds it).
    async fn start_sign_in(
        &self,
        id: &str,
        s: &SignIn,
        addr: Option<(IpAddr, u8)>,
    ) -> Result<Started, String> {
        let bytes = serde_json::to_vec(s).map_err(|e| e.to_string())?;
        let group = addr.map(|(ip, prefix)| {
            let tag = super::super::hmac(
                &self.secret,
                "client-address",
                address_group(ip, prefix).as_bytes(),
            );
            format!("{PENDING}:{}", B64.encode(&tag[..12]))
        });
        let network = addr.and_then(|(ip, _)| network_group(ip)).map(|net| {
            let tag = super::super::hmac(&self.secret, "client-network", net.as_bytes());
            format!("{PENDING}-48:{}", B64.encode(&tag[..12]))
        });
        if group.is_none()
            && !self
                .no_address_logged
                .swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            tracing::warn!(
                "the authorization proxy sees no client addresses (serve its router with ConnectInfo): sign-ins under way are bounded in all only, not per client"
            );
        }
        let mut bounds = Vec::with_capacity(3);
        let mut kinds = Vec::with_capacity(3);
        if let Some(g) = &group {
            bounds.push(Bound::refusing(g, self.max_pending_per_client));
            kinds.push(Started::ClientFull);
        }
        if let Some(n) = &network {
            bounds.push(Bound::refusing(n, self.max_pending_per_network));
            kinds.push(Started::NetworkFull);
        }
        // Full, the table drops the oldest sign-in of whoever holds the most (a client
        // address or an IPv6 /48) rather than turn everyone away.
        bounds.push(Bound::making_room(PENDING, self.max_pending));
        kinds.push(Started::AllFull);
        match self
            .store
            .insert_bounded(&sign_in_key(id), bytes, ttl(self.sign_in_ttl), &bounds)
            .await
            .map_err(|e| e.to_string())?
        {
            Insertion::Stored => Ok(Started::Yes),
            Insertion::Full(i) => Ok(kinds.into_iter().nth(i).unwrap_or(Started::AllFull)),
            _ => Err("a sign-in id was drawn twice".into()),
        }
    }

    async fn save_sign_in(&self, id: &str, s: &SignIn) -> Result<(), String> {
        let bytes = serde_json::to_vec(s).map_err(|e| e.to_string())?;
        self.store
            .put(&sign_in_key(id), bytes, ttl(self.sign_in_ttl))
            .await
            .map_err(|e| e.to_string())
    }

    async fn load_sign_in(&self, id: &str) -> Result<Option<SignIn>, String> {
        Ok(self
            .store
            .get(&sign_in_key(id))
            .await
            .map_err(|e| e.to_string())?
            .and_then(|b| serde_json::from_slice(&b).ok()))
    }

    /// The scopes granted for a request of `requested` (space-separated): those of them this
    /// server supports, never more than `allowed` when given. Unknown scopes are left out; a
    /// request of only unknown scopes is refused.
    pub(crate) fn granted_scopes(
        &self,
        requested: Option<&str>,
        allowed: Option<&[String]>,
    ) -> Result<Vec<String>, String> {
        let Some(requested) = requested else {
            return Ok(allowed.map(<[String]>::to_vec).unwrap_or_default());
        };
        let mut out = Vec::new();
        let mut unknown = Vec::new();
        for s in requested.split(' ').filter(|s| !s.is_empty()) {
            let known = self.scopes.iter().any(|x| x == s)
                && allowed.is_none_or(|a| a.iter().any(|x| x == s));
            if known {
                if !out.iter().any(|x| x == s) {
                    out.push(s.to_owned());
                }
            } else {
                unknown.push(clip(s));
            }
        }
        if out.is_empty() && !unknown.is_empty() {
            return Err(format!(
                "the scopes {} are not available (supported: {})",
                unknown.join(" "),
                allowed.map_or_else(|| self.scopes.join(" "), |a| a.join(" "))
            ));
        }
        Ok(out)
    }
}

/// The consent form: approve sends the user upstream, deny back to the client with
/// `access_denied`. Only a same-origin post from the browser that saw the page counts.
pub(super) async fn consent(State(p): State<Arc<Inner>>, request: Request) -> Response {
    let headers = request.headers().clone();
    let forbidden = |why: &str| error_page(StatusCode::FORBIDDEN, "Consent not accepted", why);
    if let Some(origin) = headers
        .get(http::header::ORIGIN)
        .and_then(|v| v.to_str().ok())
        && origin != p.origin()
    {
        tracing::info!(origin = %clip(origin), "a cross-site consent post was refused");
        return forbidden("The form was posted from another site. Nothing was approved.");
    }
    if let Some(site) = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok())
        && !matches!(site, "same-origin" | "none")
    {
        return forbidden("The form was posted from another site. Nothing was approved.");
    }
    let body = match read_body(request.into_body(), MAX_CONSENT).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    let pairs = match params(&String::from_utf8_lossy(&body)) {
        Ok(x) => x,
        Err(e) => return error_page(StatusCode::BAD_REQUEST, "Invalid form", &e),
    };
    let (Some(id), Some(csrf)) = (param(&pairs, "request"), param(&pairs, "csrf")) else {
        return error_page(
            StatusCode::BAD_REQUEST,
            "Invalid form",
            "The form is incomplete.",
        );
    };
    let mut sign_in = match p.load_sign_in(id).await {
        Ok(Some(s)) => s,
        Ok(None) => {
            return error_page(
                StatusCode::BAD_REQUEST,
                "Sign-in expired",
                "This sign-in is unknown or expired. Start again from the application.",
            );
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot read a sign-in");
            return error_page(
                StatusCode::SERVICE_UNAVAILABLE,
                "Try again",
                "The server is busy.",
            );
        }
    };
    let browser_ok = p
        .browser_cookie(&headers)
        .is_some_and(|c| constant_eq(digest(&c).as_bytes(), sign_in.browser.as_bytes()));
    if !browser_ok || !constant_eq(csrf.as_bytes(), sign_in.csrf.as_bytes()) {
        tracing::info!(client_id = %clip(&sign_in.client_id), "a consent post from another browser was refused");
        return forbidden(
            "This sign-in was started in another browser (or its form is stale). Nothing was approved.",
        );
    }
    let client_back = |code: &str, description: &str, s: &SignIn| {
        let mut q = vec![("error", code), ("error_description", description)];
        if let Some(st) = &s.state {
            q.push(("state", st));
        }
        q.push(("iss", &p.issuer));
        redirect(StatusCode::SEE_OTHER, &with_query(&s.redirect_uri, &q))
    };
    if param(&pairs, "approve").is_none() {
        let _ = p.store.delete(&sign_in_key(id)).await;
        return client_back("access_denied", "the user denied the request", &sign_in);
    }
    let endpoints = match p.endpoints().await {
        Ok(e) => e,
        Err(e) => {
            tracing::warn!(error = %e, "the upstream provider cannot be used");
            return client_back(
                "temporarily_unavailable",
                "the identity provider cannot be reached",
                &sign_in,
            );
        }
    };
    let (Ok(verifier), Ok(nonce)) = (random(32), random(16)) else {
        return client_back("server_error", "no randomness", &sign_in);
    };
    let challenge = s256(&verifier);
    sign_in.approved = true;
    sign_in.upstream_verifier = Some(verifier);
    sign_in.nonce = Some(nonce.clone());
    if let Err(e) = p.save_sign_in(id, &sign_in).await {
        tracing::warn!(error = %e, "cannot keep a sign-in");
        return client_back(
            "temporarily_unavailable",
            "the authorization server is busy",
            &sign_in,
        );
    }
    let callback = p.url("/oauth/callback");
    let scope = p.upstream.scopes.join(" ");
    let mut q: Vec<(&str, &str)> = vec![
        ("response_type", "code"),
        ("client_id", &p.upstream.client_id),
        ("redirect_uri", &callback),
        ("state", id),
        ("code_challenge", &challenge),
        ("code_challenge_method", "S256"),
    ];
    if !scope.is_empty() {
        q.push(("scope", &scope));
    }
    if p.upstream.is_oidc() {
        q.push(("nonce", &nonce));
    }
    if let Some(r) = &p.upstream.resource {
        q.push(("resource", r));
    }
    for (k, v) in &p.upstream.params {
        q.push((k, v));
    }
    redirect(
        StatusCode::SEE_OTHER,
        &with_query(&endpoints.authorization_endpoint, &q),
    )
}

/// The upstream sends the user back here: the sign-in finishes only in the browser that
/// approved it, once.
pub(super) async fn callback(State(p): State<Arc<Inner>>, request: Request) -> Response {
    let query = request.uri().query().unwrap_or_default().to_owned();
    let pairs = form_decode(&query);
    let get = |n: &str| pairs.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
    let Some(id) = get("state").filter(|s| !s.is_empty()) else {
        return error_page(
            StatusCode::BAD_REQUEST,
            "Invalid sign-in",
            "The identity provider's answer names no sign-in (state).",
        );
    };
    let sign_in = match p.load_sign_in(id).await {
        Ok(Some(s)) => s,
        Ok(None) => {
            return error_page(
                StatusCode::BAD_REQUEST,
                "Sign-in expired",
                "This sign-in is unknown, expired or already finished. Start again from the application.",
            );
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot read a sign-in");
            return error_page(
                StatusCode::SERVICE_UNAVAILABLE,
                "Try again",
                "The server is busy.",
            );
        }
    };
    let browser_ok = p
        .browser_cookie(request.headers())
        .is_some_and(|c| constant_eq(digest(&c).as_bytes(), sign_in.browser.as_bytes()));
    if !browser_ok || !sign_in.approved {
        tracing::info!(client_id = %clip(&sign_in.client_id), "a callback in a browser that did not approve was refused");
        return error_page(
            StatusCode::FORBIDDEN,
            "Sign-in not approved here",
            "This sign-in was not approved in this browser. No code was issued.",
        );
    }
    // Once: whoever takes it finishes it.
    match p.store.take(&sign_in_key(id)).await {
        Ok(Some(_)) => {}
        Ok(None) => {
            return error_page(
                StatusCode::BAD_REQUEST,
                "Sign-in expired",
                "This sign-in is already finished.",
            );
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot finish a sign-in");
            return error_page(
                StatusCode::SERVICE_UNAVAILABLE,
                "Try again",
                "The server is busy.",
            );
        }
    }
    let back = |params: &[(&str, &str)]| {
        let mut q: Vec<(&str, &str)> = params.to_vec();
        if let Some(s) = &sign_in.state {
            q.push(("state", s));
        }
        q.push(("iss", &p.issuer));
        redirect(StatusCode::FOUND, &with_query(&sign_in.redirect_uri, &q))
    };
    if let Some(error) = get("error") {
        let code = match error {
            "access_denied" | "temporarily_unavailable" | "server_error" => error,
            _ => "access_denied",
        };
        return back(&[
            ("error", code),
            (
                "error_description",
                "the identity provider did not sign the user in",
            ),
        ]);
    }
    let Some(code) = get("code").filter(|c| !c.is_empty()) else {
        return back(&[
            ("error", "server_error"),
            (
                "error_description",
                "the identity provider answered without a code",
            ),
        ]);
    };
    let endpoints = match p.endpoints().await {
        Ok(e) => e,
        Err(_) => {
            return back(&[
                ("error", "temporarily_unavailable"),
                (
                    "error_description",
                    "the identity provider cannot be reached",
                ),
            ]);
        }
    };
    let callback = p.url("/oauth/callback");
    let verifier = sign_in.upstream_verifier.clone().unwrap_or_default();
    let mut fields = vec![
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", callback.as_str()),
        ("code_verifier", verifier.as_str()),
    ];
    if let Some(r) = &p.upstream.resource {
        fields.push(("resource", r));
    }
    let upstream = match p
        .upstream
        .token_request(&p.fetcher, &endpoints, &fields)
        .await
    {
        Ok(t) => t,
        Err(e) => {
            tracing::warn!(error = %e, "the upstream code exchange failed");
            let code = if matches!(e, UpstreamError::Unavailable(_)) {
                "temporarily_unavailable"
            } else {
                "access_denied"
            };
            return back(&[
                ("error", code),
                (
                    "error_description",
                    "the identity provider did not complete the sign-in",
                ),
            ]);
        }
    };
    let nonce = sign_in.nonce.clone().unwrap_or_default();
    let (subject, claims) = match p
        .upstream
        .identity(&p.fetcher, &endpoints, &upstream, &nonce)
        .await
    {
        Ok(x) => x,
        Err(e) => {
            tracing::warn!(error = %e, "the upstream sign-in names nobody");
            return back(&[
                ("error", "access_denied"),
                (
                    "error_description",
                    "the identity provider's answer does not identify the user",
                ),
            ]);
        }
    };
    // What the user may let the client do: of the scopes asked for, those the policy gives
    // this user (the token answer's `scope` says which).
    let scopes = p
        .policy
        .filter(&UpstreamUser::new(&subject, &claims), &sign_in.scopes);
    if scopes.len() < sign_in.scopes.len() {
        tracing::info!(
            client_id = %clip(&sign_in.client_id),
            asked = %sign_in.scopes.join(" "),
            granted = %scopes.join(" "),
            "a user asked for scopes the policy does not give them"
        );
    }
    let issued = async {
        let gid = random(24)?;
        let grant = Grant {
            subject: subject.clone(),
            client_id: sign_in.client_id.clone(),
            scopes,
            upstream: Some(upstream),
            sealed_upstream: None,
            claims,
            refresh: None,
        };
        let bytes = p.grant_bytes(&gid, &grant)?;
        p.store
            .put(&grant_key(&gid), bytes, ttl(p.refresh_ttl))
            .await
            .map_err(|e| crate::auth::AuthError::unavailable(e.to_string()))?;
        let code = random(32)?;
        let record = Code {
            client_id: sign_in.client_id.clone(),
            redirect_uri: sign_in.redirect_uri.clone(),
            code_challenge: sign_in.code_challenge.clone(),
            grant: gid,
            dpop_jkt: sign_in.dpop_jkt.clone(),
        };
        let bytes = serde_json::to_vec(&record)
            .map_err(|e| crate::auth::AuthError::misconfigured(e.to_string()))?;
        p.store
            .put(&format!("code:{}", digest(&code)), bytes, ttl(p.code_ttl))
            .await
            .map_err(|e| crate::auth::AuthError::unavailable(e.to_string()))?;
        Ok::<_, crate::auth::AuthError>(code)
    }
    .await;
    match issued {
        Ok(code) => {
            tracing::info!(client_id = %clip(&sign_in.client_id), "a user signed in through the upstream provider");
            back(&[("code", &code)])
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot keep a grant");
            back(&[
                ("error", "temporarily_unavailable"),
                ("error_description", "the authorization server is busy"),
            ])
        }
    }
}
