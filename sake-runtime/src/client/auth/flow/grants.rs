//! The grants [`OAuth`] runs against an authorization server: token requests (with DPoP and
//! its nonce), refreshing, the server's metadata, the client it signs in as (given,
//! registered, or a metadata document), and the authorization code, client credentials and
//! JWT bearer grants.

use super::*;

impl OAuth {
    /// Sends a token request: with a DPoP proof when `dpop`, once more with the
    /// authorization server's nonce when it asks for one (RFC 9449 section 8).
    pub(super) async fn token_request(
        &self,
        endpoint: &Endpoint<'_>,
        grant: &Grant,
        dpop: bool,
    ) -> Result<Response, OAuthError> {
        let mut retried = false;
        loop {
            let mut extra = HeaderMap::new();
            if dpop {
                extra.insert(
                    DPOP,
                    self.dpop()?
                        .proof("POST", endpoint.url, None, endpoint.url)?,
                );
            }
            let response = endpoint.send(grant, extra).await?;
            if !dpop {
                return Ok(response);
            }
            let fresh = response
                .headers
                .get("dpop-nonce")
                .and_then(|v| v.to_str().ok())
                .is_some_and(|n| self.dpop().is_ok_and(|d| d.set_nonce(endpoint.url, n)));
            let wants_nonce = response.status == http::StatusCode::BAD_REQUEST
                && serde_json::from_slice::<serde_json::Value>(&response.body)
                    .ok()
                    .is_some_and(|v| v["error"] == "use_dpop_nonce");
            if wants_nonce && fresh && !retried {
                tracing::debug!(
                    issuer = endpoint.issuer,
                    "the token endpoint wants a DPoP nonce"
                );
                retried = true;
                continue;
            }
            return Ok(response);
        }
    }

    /// The headers `tokens` would be sent with, to compare with what a refused request
    /// carried.
    pub(super) fn same_token(sent: &HeaderMap, tokens: Option<&Tokens>) -> bool {
        let sent = sent.get(AUTHORIZATION).and_then(|v| v.to_str().ok());
        match (sent, tokens) {
            (None, None) => true,
            (Some(s), Some(t)) => s
                .split_once(' ')
                .is_some_and(|(_, tok)| tok == t.access_token.expose()),
            _ => false,
        }
    }

    pub(super) async fn refresh_tokens(
        &self,
        server: &str,
        slot: &Slot,
        tokens: &Tokens,
    ) -> Result<(), OAuthError> {
        let Some(refresh) = tokens.refresh_token.clone() else {
            return Err(OAuthError::config(format!(
                "the authorization server {} issued no refresh token for {server}",
                tokens.issuer
            )));
        };
        let meta = self.known_metadata(&tokens.issuer, true).await?;
        let client = self.client_for(&meta, None).await?;
        let endpoint = Endpoint {
            fetcher: &self.inner.fetcher,
            url: &meta.token_endpoint,
            issuer: &meta.issuer,
            client: &client,
            method: client.method(meta.token_endpoint_auth_methods_supported.as_deref()),
        };
        let grant = Grant {
            grant_type: "refresh_token",
            fields: vec![
                ("refresh_token", refresh.expose().to_owned()),
                ("resource", tokens.resource.clone()),
            ],
        };
        let response = self
            .token_request(&endpoint, &grant, tokens.token_type == "DPoP")
            .await?;
        let mut fresh = endpoint.tokens(
            &grant,
            &response,
            &tokens.requested_scopes,
            &tokens.resource,
        )?;
        // RFC 6749 section 6: without a new refresh token, the old one stays valid.
        if fresh.refresh_token.is_none() {
            fresh.refresh_token = Some(refresh);
        }
        if response_lacks_scope(&response.body) {
            fresh.scopes = tokens.scopes.clone();
        }
        tracing::info!(server, issuer = %meta.issuer, "refreshed the access token");
        self.save(server, slot, fresh).await
    }

    /// Whether tokens are renewed by running the grant again (the client acts on its own
    /// behalf: client credentials, JWT bearer), with no user and no refresh token.
    pub(super) fn renews_by_grant(&self) -> bool {
        matches!(
            self.inner.grant,
            GrantKind::ClientCredentials | GrantKind::JwtBearer(_)
        )
    }

    /// Obtains new tokens like `tokens` (same authorization server, resource and scopes) by
    /// running the grant again, before they expire.
    pub(super) async fn renew_by_grant(
        &self,
        server: &str,
        slot: &Slot,
        tokens: &Tokens,
    ) -> Result<(), OAuthError> {
        let meta = self.known_metadata(&tokens.issuer, false).await?;
        let dpop = tokens.token_type == "DPoP";
        let (resource, scopes) = (&tokens.resource, &tokens.requested_scopes);
        let fresh = match &self.inner.grant {
            GrantKind::ClientCredentials => {
                self.client_credentials_grant(&meta, resource, scopes, dpop)
                    .await?
            }
            GrantKind::JwtBearer(source) => {
                self.jwt_bearer_grant(source.as_ref(), &meta, resource, scopes, dpop)
                    .await?
            }
            GrantKind::Code(_) => {
                return Err(OAuthError::config(
                    "tokens of a signed-in user are renewed with their refresh token",
                ));
            }
        };
        tracing::info!(server, issuer = %meta.issuer, "renewed the access token before it expired");
        self.save(server, slot, fresh).await
    }

    /// Fetches the metadata of `issuer`, and remembers it.
    /// The metadata of `issuer`, as found before (discovered again when it is not kept), its
    /// token endpoint checked: for renewing tokens it issued.
    async fn known_metadata(
        &self,
        issuer: &str,
        legacy: bool,
    ) -> Result<ServerMetadata, OAuthError> {
        let known = self
            .inner
            .metadata
            .lock()
            .ok()
            .and_then(|m| m.get(issuer).cloned());
        let meta = match known {
            Some(m) => m,
            None => self.server_metadata(issuer, legacy).await?,
        };
        checked(&meta.token_endpoint, self.inner.insecure)?;
        Ok(meta)
    }

    pub(super) async fn server_metadata(
        &self,
        issuer: &str,
        legacy: bool,
    ) -> Result<ServerMetadata, OAuthError> {
        let meta = discovery::authorization_server(
            &self.inner.fetcher,
            issuer,
            legacy,
            self.inner.insecure,
        )
        .await?;
        if let Ok(mut m) = self.inner.metadata.lock() {
            if m.len() >= MAX_SERVERS && !m.contains_key(issuer) {
                m.clear();
            }
            m.insert(issuer.to_owned(), meta.clone());
        }
        Ok(meta)
    }

    /// The client to present to the authorization server of `meta`, in the order of the MCP
    /// authorization pages ("Client Registration"): pre-registered, Client ID Metadata
    /// Document, a registration kept from before, dynamic registration. `register_for`: the
    /// redirect URI to register with, when registering is allowed.
    pub(super) async fn client_for(
        &self,
        meta: &ServerMetadata,
        register_for: Option<&str>,
    ) -> Result<RegisteredClient, OAuthError> {
        let issuer = &meta.issuer;
        if let Some(client) = &self.inner.pre_registered {
            let bound = match client.issuer() {
                Some(i) => Some(i.to_owned()),
                None => self.inner.bound.lock().ok().and_then(|mut b| {
                    // Bound to the first authorization server it is used with.
                    b.get_or_insert_with(|| issuer.clone());
                    b.clone()
                }),
            };
            if let Some(bound) = bound
                && bound != *issuer
            {
                return Err(OAuthError::WrongAuthorizationServer {
                    registered: bound,
                    current: issuer.clone(),
                });
            }
            return Ok(client.clone().bound_to(issuer));
        }
        if let Some(url) = &self.inner.metadata_document
            && meta.client_id_metadata_document_supported
        {
            return Ok(RegisteredClient::public(url.clone()));
        }
        let store = &self.inner.store;
        if let Some(kept) = store
            .load_client(issuer)
            .await
            .map_err(|e| OAuthError::Store { reason: e.0 })?
            .filter(|c| !c.expired() && c.issuer() == Some(issuer.as_str()))
        {
            return Ok(kept);
        }
        let Some(redirect_uri) = register_for else {
            return Err(OAuthError::NoRegistration {
                issuer: issuer.clone(),
                reason: "the registration made with it is gone".into(),
            });
        };
        if !self.inner.dynamic_registration {
            return Err(OAuthError::NoRegistration {
                issuer: issuer.clone(),
                reason: "dynamic registration is disabled and no client is pre-registered; pass one with OAuthBuilder::client".into(),
            });
        }
        let Some(endpoint) = &meta.registration_endpoint else {
            return Err(OAuthError::NoRegistration {
                issuer: issuer.clone(),
                reason: format!(
                    "it offers no dynamic registration{}; register a client with it and pass it with OAuthBuilder::client",
                    if self.inner.metadata_document.is_some() {
                        " and does not accept Client ID Metadata Documents"
                    } else {
                        " (and no Client ID Metadata Document URL is configured: OAuthBuilder::client_metadata_document)"
                    }
                ),
            });
        };
        checked(endpoint, self.inner.insecure)?;
        let client = register(
            &self.inner.fetcher,
            endpoint,
            issuer,
            &RegistrationRequest {
                client_name: &self.inner.client_name,
                redirect_uri,
                application_type: self.inner.application_type,
                supported: meta.token_endpoint_auth_methods_supported.as_deref(),
                refresh: self.inner.refresh_tokens,
            },
        )
        .await?;
        store
            .save_client(issuer, &client)
            .await
            .map_err(|e| OAuthError::Store { reason: e.0 })?;
        Ok(client)
    }

    /// Obtains new tokens for `server` from the authorization server `issuer`.
    pub(super) async fn authorize(
        &self,
        server: &str,
        slot: &Slot,
        prm: Option<&ResourceMetadata>,
        issuer: &str,
        mut scopes: Vec<String>,
        resource_dpop: bool,
    ) -> Result<(), OAuthError> {
        let meta = self.server_metadata(issuer, prm.is_none()).await?;
        checked(&meta.token_endpoint, self.inner.insecure)?;
        // RFC 8707: the resource exactly as the protected resource metadata publishes it;
        // without metadata (2025-03-26), the server's URL.
        let resource = prm.map_or_else(|| canonical(server), |p| p.resource.clone());
        // DPoP-bound tokens only where both ends take them: the authorization server
        // advertises ES256, and the server challenges with `DPoP` or its metadata lists DPoP
        // (RFC 9449 sections 5.1 and 7.1; a server that knows only Bearer refuses them).
        let dpop = resource_dpop && self.wants_dpop(&meta);
        let tokens = match &self.inner.grant {
            GrantKind::Code(user) => {
                if self.inner.refresh_tokens
                    && meta.lists_scope(OFFLINE_ACCESS)
                    && !scopes.iter().any(|s| s == OFFLINE_ACCESS)
                {
                    // 2026-07-28, "Refresh Tokens": only when the server lists it.
                    scopes.push(OFFLINE_ACCESS.to_owned());
                }
                self.code_flow(user.as_ref(), &meta, &resource, &scopes, dpop)
                    .await?
            }
            GrantKind::ClientCredentials => {
                self.client_credentials_grant(&meta, &resource, &scopes, dpop)
                    .await?
            }
            GrantKind::JwtBearer(source) => {
                self.jwt_bearer_grant(source.as_ref(), &meta, &resource, &scopes, dpop)
                    .await?
            }
        };
        tracing::info!(server, issuer, "authorized");
        self.save(server, slot, tokens).await
    }

    pub(super) async fn code_flow(
        &self,
        user: &dyn UserStep,
        meta: &ServerMetadata,
        resource: &str,
        scopes: &[String],
        dpop: bool,
    ) -> Result<Tokens, OAuthError> {
        let issuer = meta.issuer.as_str();
        // MCP authorization pages, "Authorization Code Protection": no PKCE, no flow.
        if !meta.supports_s256() {
            return Err(OAuthError::PkceUnsupported {
                issuer: issuer.to_owned(),
            });
        }
        let Some(authorization_endpoint) = &meta.authorization_endpoint else {
            return Err(OAuthError::ServerMetadata {
                issuer: issuer.to_owned(),
                reason: "it names no authorization_endpoint".into(),
            });
        };
        checked(authorization_endpoint, self.inner.insecure)?;
        let redirect_uri = user.redirect_uri();
        // "Communication Security": a redirect URI is on this machine, or https.
        checked(&redirect_uri, self.inner.insecure)?;
        let scope = (!scopes.is_empty()).then(|| scopes.join(" "));
        let client = self.client_for(meta, Some(&redirect_uri)).await?;
        let pkce = Pkce::new()?;
        let state = random(16)?;
        let mut params: Vec<(&str, &str)> = vec![
            ("response_type", "code"),
            ("client_id", client.client_id()),
            ("redirect_uri", &redirect_uri),
            ("code_challenge", &pkce.challenge),
            ("code_challenge_method", "S256"),
            ("state", &state),
            ("resource", resource),
        ];
        if let Some(s) = &scope {
            params.push(("scope", s));
        }
        let url = with_query(authorization_endpoint, &params);
        tracing::debug!(issuer, "asking the user to authorize");
        let callback = user.authorize(&url).await?;
        // RFC 9207 section 2.4, as the 2026-07-28 authorization page tabulates it: first,
        // before anything else of the response is looked at (an error included).
        let iss = callback.get("iss");
        match iss {
            Some(i) if i != issuer || callback.count("iss") > 1 => {
                return Err(OAuthError::IssuerParameter {
                    expected: issuer.to_owned(),
                    received: Some(super::super::clip(i)),
                });
            }
            None if meta.iss_parameter_supported => {
                return Err(OAuthError::IssuerParameter {
                    expected: issuer.to_owned(),
                    received: None,
                });
            }
            _ => {}
        }
        if callback.get("state") != Some(state.as_str()) {
            return Err(OAuthError::StateMismatch);
        }
        if let Some(error) = callback.get("error") {
            return Err(OAuthError::Denied {
                error: super::super::clip(error),
                description: callback.get("error_description").map(super::super::clip),
            });
        }
        let Some(code) = callback.get("code").filter(|c| !c.is_empty()) else {
            return Err(OAuthError::protocol(
                issuer,
                "the authorization response has neither a code nor an error",
            ));
        };
        let endpoint = Endpoint {
            fetcher: &self.inner.fetcher,
            url: &meta.token_endpoint,
            issuer,
            client: &client,
            method: client.method(meta.token_endpoint_auth_methods_supported.as_deref()),
        };
        let grant = Grant {
            grant_type: "authorization_code",
            fields: vec![
                ("code", code.to_owned()),
                ("redirect_uri", redirect_uri.clone()),
                ("code_verifier", pkce.verifier.expose().to_owned()),
                ("resource", resource.to_owned()),
            ],
        };
        let response = self.token_request(&endpoint, &grant, dpop).await?;
        endpoint.tokens(&grant, &response, scopes, resource)
    }

    pub(super) async fn client_credentials_grant(
        &self,
        meta: &ServerMetadata,
        resource: &str,
        scopes: &[String],
        dpop: bool,
    ) -> Result<Tokens, OAuthError> {
        let client = self.client_for(meta, None).await?;
        let endpoint = Endpoint {
            fetcher: &self.inner.fetcher,
            url: &meta.token_endpoint,
            issuer: &meta.issuer,
            client: &client,
            method: client.method(meta.token_endpoint_auth_methods_supported.as_deref()),
        };
        let mut fields = vec![("resource", resource.to_owned())];
        if !scopes.is_empty() {
            fields.push(("scope", scopes.join(" ")));
        }
        let grant = Grant {
            grant_type: "client_credentials",
            fields,
        };
        let response = self.token_request(&endpoint, &grant, dpop).await?;
        endpoint.tokens(&grant, &response, scopes, resource)
    }

    pub(super) async fn jwt_bearer_grant(
        &self,
        source: &dyn AssertionSource,
        meta: &ServerMetadata,
        resource: &str,
        scopes: &[String],
        dpop: bool,
    ) -> Result<Tokens, OAuthError> {
        let client = self.client_for(meta, None).await?;
        let assertion = source
            .assertion(&AssertionRequest {
                issuer: &meta.issuer,
                resource,
                scopes,
            })
            .await?;
        let endpoint = Endpoint {
            fetcher: &self.inner.fetcher,
            url: &meta.token_endpoint,
            issuer: &meta.issuer,
            client: &client,
            method: client.method(meta.token_endpoint_auth_methods_supported.as_deref()),
        };
        let mut fields = vec![
            ("assertion", assertion.expose().to_owned()),
            ("resource", resource.to_owned()),
        ];
        if !scopes.is_empty() {
            fields.push(("scope", scopes.join(" ")));
        }
        let grant = Grant {
            grant_type: JWT_BEARER,
            fields,
        };
        let response = self.token_request(&endpoint, &grant, dpop).await?;
        endpoint.tokens(&grant, &response, scopes, resource)
    }
}
