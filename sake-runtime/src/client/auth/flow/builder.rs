//! [`OAuthBuilder`]: the settings of an [`OAuth`] flow, checked when it is built.

use super::*;

impl OAuthBuilder {
    pub(super) fn new(grant: GrantKind) -> Self {
        OAuthBuilder {
            grant,
            pre_registered: None,
            metadata_document: None,
            dynamic_registration: true,
            client_name: "sake-client".into(),
            application_type: ApplicationType::Native,
            scopes: None,
            refresh_tokens: true,
            insecure: false,
            store: None,
            timeout: Duration::from_secs(30),
            dpop: true,
        }
    }

    /// Whether to ask for DPoP-bound tokens (RFC 9449) from authorization servers that
    /// advertise `ES256` in `dpop_signing_alg_values_supported` (default `true`). A DPoP-bound
    /// token is useless to anyone without the client's key, which lives in memory only: after
    /// a restart, persisted DPoP-bound tokens are replaced by a new authorization.
    pub fn dpop(mut self, enabled: bool) -> Self {
        self.dpop = enabled;
        self
    }

    /// A client registered with the authorization server ahead of time: used before any
    /// other way of registering (bind it to its server with
    /// [`RegisteredClient::for_issuer`]).
    pub fn client(mut self, client: RegisteredClient) -> Self {
        self.pre_registered = Some(client);
        self
    }

    /// The HTTPS URL of the client's Client ID Metadata Document (the client hosts it; see
    /// [`OAuth::client_metadata`]): the `client_id` at authorization servers that advertise
    /// `client_id_metadata_document_supported`.
    pub fn client_metadata_document(mut self, url: impl Into<String>) -> Self {
        self.metadata_document = Some(url.into());
        self
    }

    /// Whether to register dynamically (RFC 7591) with authorization servers that offer it
    /// when no other registration applies (default `true`).
    pub fn dynamic_registration(mut self, enabled: bool) -> Self {
        self.dynamic_registration = enabled;
        self
    }

    /// The `client_name` registered dynamically (default `sake-client`).
    pub fn client_name(mut self, name: impl Into<String>) -> Self {
        self.client_name = name.into();
        self
    }

    /// The `application_type` registered dynamically (default [`ApplicationType::Native`]).
    pub fn application_type(mut self, kind: ApplicationType) -> Self {
        self.application_type = kind;
        self
    }

    /// The scopes to ask for when the server's challenge names none (by default, those its
    /// protected resource metadata lists, or none).
    pub fn scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = Some(scopes.into_iter().map(Into::into).collect());
        self
    }

    /// Whether to ask for refresh tokens (default `true`): `refresh_token` among the grant
    /// types registered, and `offline_access` requested from authorization servers that list
    /// it.
    pub fn refresh_tokens(mut self, enabled: bool) -> Self {
        self.refresh_tokens = enabled;
        self
    }

    /// Where tokens and registrations are kept (default: a [`MemoryStore`] of this `OAuth`).
    pub fn store(mut self, store: impl TokenStore + 'static) -> Self {
        self.store = Some(Arc::new(store));
        self
    }

    /// The longest wait for each answer of an authorization server (default 30 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Allows plain `http` to hosts other than this machine, for authorization servers and
    /// for servers that receive tokens. For test networks only: the MCP authorization pages
    /// require https, and tokens sent over http can be read by anyone on the way.
    pub fn allow_insecure_http(mut self, allow: bool) -> Self {
        self.insecure = allow;
        self
    }

    /// Builds the [`OAuth`].
    pub fn build(self) -> Result<OAuth, OAuthError> {
        if let Some(url) = &self.metadata_document {
            // Client ID Metadata Documents: an https URL with a path (or, for tests, plain
            // http on this machine: the authorization server decides whether it takes it).
            let ok = url.parse::<http::Uri>().is_ok_and(|u| {
                let loopback = matches!(u.host(), Some("127.0.0.1" | "localhost" | "[::1]"));
                (u.scheme_str() == Some("https") || (u.scheme_str() == Some("http") && loopback))
                    && u.host().is_some()
                    && u.path().len() > 1
            });
            if !ok {
                return Err(OAuthError::config(format!(
                    "the client metadata document URL {url:?} must be an https URL with a path"
                )));
            }
        }
        if matches!(self.grant, GrantKind::ClientCredentials)
            && self
                .pre_registered
                .as_ref()
                .is_none_or(|c| c.secret().is_none() && c.key().is_none())
        {
            return Err(OAuthError::config(
                "the client credentials grant needs a confidential client: RegisteredClient::with_secret or RegisteredClient::with_key",
            ));
        }

        let fetcher = Fetcher::new(Limits {
            timeout: self.timeout,
            max_bytes: 1 << 20,
        })
        .map_err(OAuthError::config)?;
        Ok(OAuth {
            inner: Arc::new(Inner {
                grant: self.grant,
                pre_registered: self.pre_registered,
                bound: Mutex::new(None),
                metadata_document: self.metadata_document,
                dynamic_registration: self.dynamic_registration,
                client_name: self.client_name,
                application_type: self.application_type,
                scopes: self.scopes,
                refresh_tokens: self.refresh_tokens,
                insecure: self.insecure,
                store: self.store.unwrap_or_else(|| Arc::new(MemoryStore::new())),
                fetcher,
                slots: Mutex::new(HashMap::new()),
                metadata: Mutex::new(HashMap::new()),
                use_dpop: self.dpop,
                dpop: OnceLock::new(),
            }),
        })
    }
}
