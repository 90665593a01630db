//! The proxy's tokens: its signing key (derived from its secret), the access tokens it issues
//! and checks, the grants behind them, and the upstream session a tool reaches through the
//! principal.

use std::sync::Arc;
use std::time::Duration;

use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use p256::pkcs8::EncodePrivateKey as _;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::store::ProxyStore as _;
use super::upstream::{UpstreamError, UpstreamTokens};
use super::{B64, Inner, hmac, now, random};
use crate::auth::jwt::principal_from_claims;
use crate::auth::upstream_session::{BoxFuture, UpstreamSession, UpstreamSource};
use crate::auth::{AuthError, TokenVerifier, VerifyFuture};
use base64::Engine as _;

/// What a caller is told when the upstream cannot be reached to refresh its tokens.
pub(crate) const UPSTREAM_UNAVAILABLE: &str =
    "the identity provider cannot be reached; try again later";
/// What a caller is told when the upstream refuses to refresh its tokens.
pub(crate) const UPSTREAM_REFRESH_REFUSED: &str =
    "the identity provider no longer accepts this sign-in; sign in again";

/// The `typ` of an identity assertion authorization grant.
pub(crate) const ID_JAG_TYP: &str = "oauth-id-jag+jwt";
/// The longest token checked.
const MAX_TOKEN: usize = 16 * 1024;

/// The proxy's ES256 key pair.
pub(crate) struct Keys {
    encoding: EncodingKey,
    decoding: DecodingKey,
    jwk: Value,
    kid: String,
}

impl Keys {
    /// The key derived from the proxy's secret: replicas sharing the secret sign alike; another
    /// secret, another key.
    pub(crate) fn derive(secret: &[u8]) -> Result<Keys, String> {
        let mut counter = 0u32;
        let secret_key = loop {
            let bytes = hmac(secret, "signing-key", &counter.to_be_bytes());
            if let Ok(k) = p256::SecretKey::from_slice(&bytes) {
                break k;
            }
            counter += 1;
            if counter > 64 {
                return Err("cannot derive a signing key from the secret".into());
            }
        };
        let der = secret_key.to_pkcs8_der().map_err(|e| e.to_string())?;
        let encoding = EncodingKey::from_ec_der(der.as_bytes());
        let public =
            Jwk::from_encoding_key(&encoding, Algorithm::ES256).map_err(|e| e.to_string())?;
        let decoding = DecodingKey::from_jwk(&public).map_err(|e| e.to_string())?;
        let mut jwk = serde_json::to_value(&public).map_err(|e| e.to_string())?;
        let kid = super::digest(&jwk.to_string())[..16].to_owned();
        if let Some(o) = jwk.as_object_mut() {
            o.insert("kid".into(), json!(kid));
            o.insert("use".into(), json!("sig"));
            o.insert("alg".into(), json!("ES256"));
        }
        Ok(Keys {
            encoding,
            decoding,
            jwk,
            kid,
        })
    }

    pub(crate) fn jwks(&self) -> Value {
        json!({ "keys": [self.jwk] })
    }
}

/// One sign-in's grant: who, which client, what was granted, and the upstream tokens
/// (stored encrypted: [`Inner::grant_bytes`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Grant {
    pub(crate) subject: String,
    pub(crate) client_id: String,
    pub(crate) scopes: Vec<String>,
    #[serde(skip)]
    pub(crate) upstream: Option<UpstreamTokens>,
    /// The upstream tokens as stored: encrypted for the grant's key.
    #[serde(default, rename = "upstream", skip_serializing_if = "Option::is_none")]
    pub(crate) sealed_upstream: Option<String>,
    #[serde(default)]
    pub(crate) claims: Map<String, Value>,
    /// Its refresh token, once one was issued: only the current generation is kept.
    #[serde(default)]
    pub(crate) refresh: Option<RefreshState>,
}

/// The refresh state of a grant. A refresh token names its grant and a generation; each
/// refresh moves the grant to the next generation, and a token of an older one (someone else
/// holds a copy) revokes the grant. Nothing is stored per refresh.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct RefreshState {
    pub(crate) generation: u64,
    /// The DPoP key a public client's refresh tokens are bound to (RFC 9449 section 5).
    #[serde(default)]
    pub(crate) jkt: Option<String>,
}

pub(crate) fn grant_key(id: &str) -> String {
    format!("grant:{id}")
}

/// The lock a refresh of grant `id` holds while it moves the grant to its next generation.
pub(crate) fn refreshing_key(id: &str) -> String {
    format!("refreshing:{id}")
}

/// The longest a grant id or a refresh token is.
const MAX_REFRESH_TOKEN: usize = 200;

impl Inner {
    /// A grant as the store keeps it: its upstream tokens encrypted for its key.
    pub(crate) fn grant_bytes(&self, gid: &str, grant: &Grant) -> Result<Vec<u8>, AuthError> {
        let mut stored = grant.clone();
        stored.sealed_upstream = match &grant.upstream {
            Some(u) => {
                let plain =
                    serde_json::to_vec(u).map_err(|e| AuthError::misconfigured(e.to_string()))?;
                Some(
                    self.cipher
                        .encrypt(&grant_key(gid), &plain)
                        .map_err(AuthError::misconfigured)?,
                )
            }
            None => None,
        };
        serde_json::to_vec(&stored).map_err(|e| AuthError::misconfigured(e.to_string()))
    }

    /// A grant read from the store (`None` when it cannot be read or decrypted).
    pub(crate) fn parse_grant(&self, gid: &str, bytes: &[u8]) -> Option<Grant> {
        let mut grant: Grant = serde_json::from_slice(bytes).ok()?;
        if let Some(sealed) = grant.sealed_upstream.take() {
            let plain = self.cipher.decrypt(&grant_key(gid), &sealed)?;
            grant.upstream = Some(serde_json::from_slice(&plain).ok()?);
        }
        Some(grant)
    }

    /// The refresh token of generation `generation` of grant `gid`: `gid.generation.mac`, the
    /// MAC under the proxy's secret (only the proxy makes one; none is stored).
    pub(crate) fn refresh_token(&self, gid: &str, generation: u64) -> String {
        let mac = hmac(
            &self.secret,
            "refresh-token",
            format!("{gid}.{generation}").as_bytes(),
        );
        format!("{gid}.{generation}.{}", B64.encode(mac))
    }

    /// The grant id and generation a refresh token names, if the proxy made it.
    pub(crate) fn parse_refresh_token(&self, token: &str) -> Option<(String, u64)> {
        if token.len() > MAX_REFRESH_TOKEN {
            return None;
        }
        let mut parts = token.split('.');
        let (gid, generation, _) = (parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() || gid.is_empty() {
            return None;
        }
        let generation: u64 = generation.parse().ok()?;
        let expected = self.refresh_token(gid, generation);
        super::constant_eq(expected.as_bytes(), token.as_bytes())
            .then(|| (gid.to_owned(), generation))
    }
}

impl Inner {
    /// Issues an access token for `grant` (its id `gid`, none for a grant without upstream
    /// tokens), bound to `jkt` when given.
    pub(crate) fn access_token(
        &self,
        subject: &str,
        client_id: &str,
        scopes: &[String],
        gid: Option<&str>,
        claims: &Map<String, Value>,
        jkt: Option<&str>,
    ) -> Result<String, AuthError> {
        let iat = now();
        let mut c = json!({
            "iss": self.issuer,
            "sub": subject,
            "aud": self.resource,
            "client_id": client_id,
            "scope": scopes.join(" "),
            "iat": iat,
            "exp": iat + self.access_ttl.as_secs(),
            "jti": random(16)?,
        });
        if let Some(g) = gid {
            c["gid"] = json!(g);
        }
        if let Some(j) = jkt {
            c["cnf"] = json!({ "jkt": j });
        }
        if let Some(o) = c.as_object_mut() {
            for (k, v) in claims {
                o.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        let mut header = Header::new(Algorithm::ES256);
        header.typ = Some("at+jwt".into());
        header.kid = Some(self.keys.kid.clone());
        jsonwebtoken::encode(&header, &c, &self.keys.encoding)
            .map_err(|e| AuthError::misconfigured(format!("cannot sign an access token: {e}")))
    }

    /// Checks an access token of this proxy.
    pub(crate) fn check_access_token(&self, token: &str) -> Result<Map<String, Value>, AuthError> {
        if token.len() > MAX_TOKEN {
            return Err(AuthError::invalid("it is too long"));
        }
        let header = jsonwebtoken::decode_header(token)
            .map_err(|_| AuthError::invalid("it is not a JWT of this authorization server"))?;
        if header.alg != Algorithm::ES256 || header.typ.as_deref() != Some("at+jwt") {
            return Err(AuthError::invalid(
                "it is not an access token of this authorization server",
            ));
        }
        if header.kid.as_deref() != Some(self.keys.kid.as_str()) {
            return Err(AuthError::UnknownKey { kid: header.kid });
        }
        let mut v = Validation::new(Algorithm::ES256);
        v.set_issuer(&[&self.issuer]);
        v.set_audience(&[&self.resource]);
        v.leeway = 60;
        v.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        jsonwebtoken::decode::<Map<String, Value>>(token, &self.keys.decoding, &v)
            .map(|d| d.claims)
            .map_err(|e| match e.kind() {
                jsonwebtoken::errors::ErrorKind::ExpiredSignature => AuthError::Expired,
                jsonwebtoken::errors::ErrorKind::InvalidAudience => AuthError::WrongAudience {
                    reason: format!("its aud does not name {:?}", self.resource),
                },
                jsonwebtoken::errors::ErrorKind::InvalidIssuer => AuthError::WrongIssuer {
                    reason: format!("its iss is not {:?}", self.issuer),
                },
                jsonwebtoken::errors::ErrorKind::InvalidSignature => {
                    AuthError::invalid("its signature does not verify")
                }
                other => AuthError::invalid(format!("it cannot be verified: {other:?}")),
            })
    }

    /// The upstream access token of a grant, refreshed upstream when it expires within 30 s.
    pub(crate) async fn upstream_access_token(&self, gid: &str) -> Result<String, AuthError> {
        let key = grant_key(gid);
        let grant: Grant = self
            .store
            .get(&key)
            .await
            .map_err(|e| AuthError::unavailable(e.to_string()))?
            .and_then(|b| self.parse_grant(gid, &b))
            .ok_or_else(|| AuthError::invalid("the sign-in behind this token ended"))?;
        let Some(up) = grant.upstream.clone() else {
            return Err(AuthError::invalid(
                "this token was issued without an upstream sign-in (an enterprise assertion)",
            ));
        };
        if up.expires_at.is_none_or(|e| e > now() + 30) {
            return Ok(up.access_token);
        }
        let Some(refresh) = up.refresh_token.clone() else {
            return Err(AuthError::Expired);
        };
        let endpoints = self.endpoints().await.map_err(|e| {
            tracing::warn!(error = %e, "the upstream provider cannot be used");
            AuthError::unavailable(UPSTREAM_UNAVAILABLE)
        })?;
        let mut fields = vec![
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh.as_str()),
        ];
        if let Some(r) = &self.upstream.resource {
            fields.push(("resource", r));
        }
        let fresh = self
            .upstream
            .token_request(&self.fetcher, &endpoints, &fields)
            .await
            .map_err(|e| {
                // What the upstream said stays in the log: a tool may show this error.
                tracing::warn!(error = %e, "an upstream refresh failed");
                match e {
                    UpstreamError::Unavailable(_) => AuthError::unavailable(UPSTREAM_UNAVAILABLE),
                    _ => AuthError::invalid(UPSTREAM_REFRESH_REFUSED),
                }
            })?;
        let mut tokens = fresh;
        if tokens.refresh_token.is_none() {
            tokens.refresh_token = Some(refresh);
        }
        let access = tokens.access_token.clone();
        // The grant as it is now (a refresh may have moved it to its next generation while
        // the upstream answered): only its upstream tokens change.
        let Some(mut updated) = self
            .store
            .get(&key)
            .await
            .map_err(|e| AuthError::unavailable(e.to_string()))?
            .and_then(|b| self.parse_grant(gid, &b))
        else {
            return Err(AuthError::invalid("the sign-in behind this token ended"));
        };
        updated.upstream = Some(tokens);
        let bytes = self.grant_bytes(gid, &updated)?;
        self.store
            .put(&key, bytes, self.refresh_ttl)
            .await
            .map_err(|e| AuthError::unavailable(e.to_string()))?;
        tracing::debug!("refreshed an upstream access token");
        Ok(access)
    }
}

/// The verifier of the proxy's own access tokens.
pub(crate) struct ProxyVerifier {
    pub(crate) proxy: Arc<Inner>,
}

impl TokenVerifier for ProxyVerifier {
    fn verify<'a>(&'a self, token: &'a str) -> VerifyFuture<'a> {
        Box::pin(async move {
            let claims = self.proxy.check_access_token(token)?;
            let gid = claims.get("gid").and_then(Value::as_str).map(str::to_owned);
            // The proxy's tokens always name a subject (`sub` is required).
            let principal = principal_from_claims(claims, false)?;
            Ok(match gid {
                Some(grant) => principal.with_upstream(UpstreamSession::new(GrantTokens {
                    proxy: self.proxy.clone(),
                    grant,
                })),
                None => principal,
            })
        })
    }
}

/// The proxy's side of an [`UpstreamSession`]: a grant's upstream tokens, read from its store.
pub(crate) struct GrantTokens {
    pub(crate) proxy: Arc<Inner>,
    pub(crate) grant: String,
}

impl UpstreamSource for GrantTokens {
    fn provider(&self) -> &str {
        &self.proxy.upstream.name
    }

    fn access_token(&self) -> BoxFuture<'_, Result<String, AuthError>> {
        Box::pin(self.proxy.upstream_access_token(&self.grant))
    }

    fn id_token(&self) -> BoxFuture<'_, Result<Option<String>, AuthError>> {
        Box::pin(async move {
            let grant: Option<Grant> = self
                .proxy
                .store
                .get(&grant_key(&self.grant))
                .await
                .map_err(|e| AuthError::unavailable(e.to_string()))?
                .and_then(|b| self.proxy.parse_grant(&self.grant, &b));
            Ok(grant.and_then(|g| g.upstream).and_then(|u| u.id_token))
        })
    }

    fn same(&self, other: &dyn std::any::Any) -> bool {
        other
            .downcast_ref::<GrantTokens>()
            .is_some_and(|o| Arc::ptr_eq(&self.proxy, &o.proxy) && self.grant == o.grant)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// How long a stored record lives (never zero).
pub(crate) fn ttl(d: Duration) -> Duration {
    d.max(Duration::from_secs(1))
}

/// The Base64url SHA-256 of a PKCE verifier (RFC 7636 S256).
pub(crate) fn s256(verifier: &str) -> String {
    use sha2::{Digest as _, Sha256};
    B64.encode(Sha256::digest(verifier.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::proxy::{AuthProxy, Upstream};

    #[tokio::test]
    async fn a_failed_upstream_refresh_tells_the_caller_nothing_of_the_upstream() {
        // The upstream cannot be reached (a closed port): its address stays in the log.
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let issuer = format!("http://{}", closed.local_addr().unwrap());
        drop(closed);
        let proxy = AuthProxy::builder(
            "http://127.0.0.1:3000",
            "/mcp",
            Upstream::oidc(&issuer, "id", "secret"),
        )
        .build()
        .unwrap();
        let p = &proxy.inner;
        let grant = Grant {
            subject: "alice".into(),
            client_id: "c".into(),
            scopes: vec![],
            upstream: Some(UpstreamTokens {
                access_token: "old".into(),
                token_type: "Bearer".into(),
                refresh_token: Some("r".into()),
                id_token: None,
                expires_at: Some(now()),
                scope: None,
            }),
            sealed_upstream: None,
            claims: Map::new(),
            refresh: None,
        };
        p.store
            .put(
                &grant_key("g"),
                p.grant_bytes("g", &grant).unwrap(),
                Duration::from_secs(60),
            )
            .await
            .unwrap();
        let err = p.upstream_access_token("g").await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "the token cannot be checked now: the identity provider cannot be reached; try again later"
        );
    }
}
