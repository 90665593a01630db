//! The token endpoint: the authorization code, refresh token and client credentials grants
//! (OAuth 2.1 sections 4.1.3, 4.3, 4.2), with the client's authentication (RFC 6749 section
//! 2.3, RFC 7523) and the `resource` parameter (RFC 8707); and PKCE (RFC 7636).

use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use bytes::Bytes;
use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use http::{HeaderMap, HeaderValue, Method};
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

use super::registration::{RegisteredClient, TokenEndpointAuth};
use super::secret::Secret;
use super::store::Tokens;
use super::{OAuthError, clip};
use crate::net::fetch::{Fetcher, Response, basic_auth, form_body};

const ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
/// How long a client assertion is valid.
const ASSERTION_LIFETIME: u64 = 120;

fn b64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// `n` random bytes, Base64url: for PKCE verifiers, `state` and `jti`.
pub(crate) fn random(n: usize) -> Result<String, OAuthError> {
    let mut bytes = vec![0u8; n];
    getrandom::fill(&mut bytes)
        .map_err(|e| OAuthError::config(format!("the system has no randomness: {e}")))?;
    Ok(b64url(&bytes))
}

/// A PKCE pair (RFC 7636): the verifier (kept) and its `S256` challenge (sent).
pub(crate) struct Pkce {
    pub(crate) verifier: Secret,
    pub(crate) challenge: String,
}

impl Pkce {
    /// A fresh pair: a verifier of 32 random bytes (43 characters), the challenge
    /// `BASE64URL(SHA256(verifier))` (RFC 7636 section 4.2).
    pub(crate) fn new() -> Result<Self, OAuthError> {
        let verifier = random(32)?;
        Ok(Pkce {
            challenge: challenge_of(&verifier),
            verifier: Secret::new(verifier),
        })
    }
}

/// The `S256` challenge of a verifier.
pub(crate) fn challenge_of(verifier: &str) -> String {
    b64url(&Sha256::digest(verifier.as_bytes()))
}

pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs()
}

/// A token request, before the client's authentication.
pub(crate) struct Grant {
    /// `authorization_code`, `refresh_token`, `client_credentials`, or a URN (JWT bearer,
    /// token exchange).
    pub(crate) grant_type: &'static str,
    /// The grant's fields (without `grant_type` and the client's authentication).
    pub(crate) fields: Vec<(&'static str, String)>,
}

/// One token endpoint, and who the client is there.
pub(crate) struct Endpoint<'a> {
    pub(crate) fetcher: &'a Fetcher,
    pub(crate) url: &'a str,
    pub(crate) issuer: &'a str,
    pub(crate) client: &'a RegisteredClient,
    pub(crate) method: TokenEndpointAuth,
}

#[derive(Deserialize)]
struct RawTokens {
    access_token: Option<String>,
    token_type: Option<String>,
    #[serde(default)]
    expires_in: Option<Value>,
    #[serde(default)]
    refresh_token: Option<String>,
    #[serde(default)]
    scope: Option<String>,
}

#[derive(Deserialize)]
struct RawError {
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    error_description: Option<String>,
}

/// A token endpoint error: its status and `error` code.
pub(crate) fn error_code(e: &OAuthError) -> Option<&str> {
    match e {
        OAuthError::TokenEndpoint { error, .. } => error.as_deref(),
        _ => None,
    }
}

impl Endpoint<'_> {
    /// The form of `grant` with the client's authentication, and the headers.
    pub(crate) fn request(&self, grant: &Grant) -> Result<(HeaderMap, String), OAuthError> {
        let mut fields: Vec<(&str, String)> = vec![("grant_type", grant.grant_type.to_owned())];
        fields.extend(grant.fields.iter().map(|(k, v)| (*k, v.clone())));
        let mut headers = HeaderMap::new();
        headers.insert(
            CONTENT_TYPE,
            HeaderValue::from_static("application/x-www-form-urlencoded"),
        );
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        let id = self.client.client_id();
        match self.method {
            TokenEndpointAuth::None => fields.push(("client_id", id.to_owned())),
            TokenEndpointAuth::ClientSecretBasic => {
                let secret = self.client.secret().map(Secret::expose).unwrap_or_default();
                let value = basic_auth(id, secret).map_err(|_| {
                    OAuthError::config("the client id or secret cannot be sent in a header")
                })?;
                headers.insert(AUTHORIZATION, value);
            }
            TokenEndpointAuth::ClientSecretPost => {
                let secret = self.client.secret().map(Secret::expose).unwrap_or_default();
                fields.push(("client_id", id.to_owned()));
                fields.push(("client_secret", secret.to_owned()));
            }
            TokenEndpointAuth::PrivateKeyJwt => {
                fields.push(("client_id", id.to_owned()));
                fields.push(("client_assertion_type", ASSERTION_TYPE.to_owned()));
                fields.push(("client_assertion", self.assertion()?));
            }
        }
        let pairs: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
        Ok((headers, form_body(&pairs)))
    }

    /// A client assertion (RFC 7523 section 3): issued by and about the client, for the
    /// authorization server (its issuer identifier as the audience), short-lived, unique.
    fn assertion(&self) -> Result<String, OAuthError> {
        let Some(key) = self.client.key() else {
            return Err(OAuthError::config(
                "private_key_jwt needs a key: RegisteredClient::with_key",
            ));
        };
        let now = now();
        let claims = json!({
            "iss": self.client.client_id(),
            "sub": self.client.client_id(),
            "aud": self.issuer,
            "iat": now,
            "exp": now + ASSERTION_LIFETIME,
            "jti": random(16)?,
        });
        let mut header = jsonwebtoken::Header::new(key.alg);
        header.kid = key.kid.clone();
        jsonwebtoken::encode(&header, &claims, &key.key)
            .map_err(|e| OAuthError::config(format!("cannot sign the client assertion: {e}")))
    }

    /// Sends `grant` with `extra` headers (DPoP) and returns the raw answer.
    pub(crate) async fn send(
        &self,
        grant: &Grant,
        extra: HeaderMap,
    ) -> Result<Response, OAuthError> {
        let (mut headers, body) = self.request(grant)?;
        headers.extend(extra);
        self.fetcher
            .send(Method::POST, self.url, headers, Bytes::from(body))
            .await
            .map_err(|e| OAuthError::Unreachable {
                url: self.url.to_owned(),
                reason: e.to_string(),
            })
    }

    /// Reads a token response (OAuth 2.1 section 3.2.3) or the error (section 3.2.4).
    /// `requested` are the scopes asked for; `resource` what the tokens are for.
    pub(crate) fn tokens(
        &self,
        grant: &Grant,
        response: &Response,
        requested: &[String],
        resource: &str,
    ) -> Result<Tokens, OAuthError> {
        if !response.status.is_success() {
            let e: Option<RawError> = serde_json::from_slice(&response.body).ok();
            return Err(OAuthError::TokenEndpoint {
                issuer: self.issuer.to_owned(),
                grant: grant.grant_type.to_owned(),
                status: response.status.as_u16(),
                error: e.as_ref().and_then(|e| e.error.as_deref()).map(clip),
                description: e
                    .as_ref()
                    .and_then(|e| e.error_description.as_deref())
                    .map(clip),
            });
        }
        let raw: RawTokens = serde_json::from_slice(&response.body).map_err(|e| {
            OAuthError::protocol(
                self.issuer,
                format!("the token response is not JSON tokens: {e}"),
            )
        })?;
        let Some(access) = raw.access_token.filter(|t| !t.is_empty()) else {
            return Err(OAuthError::protocol(
                self.issuer,
                "the token response has no access_token",
            ));
        };
        let token_type = match raw.token_type.as_deref() {
            Some(t) if t.eq_ignore_ascii_case("bearer") => "Bearer",
            Some(t) if t.eq_ignore_ascii_case("dpop") => "DPoP",
            Some(other) => {
                return Err(OAuthError::protocol(
                    self.issuer,
                    format!(
                        "the token type {:?} is not one this client can use",
                        clip(other)
                    ),
                ));
            }
            None => {
                return Err(OAuthError::protocol(
                    self.issuer,
                    "the token response has no token_type",
                ));
            }
        };
        let expires_in = match &raw.expires_in {
            Some(Value::Number(n)) => n.as_u64(),
            Some(Value::String(s)) => s.parse().ok(),
            _ => None,
        };
        let scopes = match raw.scope.as_deref() {
            Some(s) => s
                .split(' ')
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect(),
            None => requested.to_vec(),
        };
        Ok(Tokens {
            access_token: Secret::new(access),
            token_type: token_type.to_owned(),
            refresh_token: raw.refresh_token.filter(|r| !r.is_empty()).map(Secret::new),
            expires_at: expires_in.map(|s| now().saturating_add(s)),
            requested_scopes: requested.to_vec(),
            scopes,
            issuer: self.issuer.to_owned(),
            resource: resource.to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::fetch::form_decode;

    #[test]
    fn pkce_verifier_and_challenge() {
        // RFC 7636 appendix B.
        assert_eq!(
            challenge_of("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
        let p = Pkce::new().unwrap();
        assert_eq!(p.verifier.expose().len(), 43);
        assert!(
            p.verifier
                .expose()
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        );
        assert_eq!(p.challenge, challenge_of(p.verifier.expose()));
        assert_ne!(Pkce::new().unwrap().verifier, p.verifier);
    }

    fn endpoint<'a>(
        fetcher: &'a Fetcher,
        client: &'a RegisteredClient,
        method: TokenEndpointAuth,
    ) -> Endpoint<'a> {
        Endpoint {
            fetcher,
            url: "https://as.example/token",
            issuer: "https://as.example",
            client,
            method,
        }
    }

    fn grant() -> Grant {
        Grant {
            grant_type: "refresh_token",
            fields: vec![
                ("refresh_token", "r t".into()),
                ("resource", "https://mcp.example/mcp".into()),
            ],
        }
    }

    #[test]
    fn each_client_authentication_method() {
        let fetcher = Fetcher::new(crate::net::fetch::Limits {
            timeout: std::time::Duration::from_secs(1),
            max_bytes: 1024,
        })
        .unwrap();
        let secret = RegisteredClient::with_secret("c id", "s:x");
        let (h, body) = endpoint(&fetcher, &secret, TokenEndpointAuth::ClientSecretBasic)
            .request(&grant())
            .unwrap();
        // client_secret_basic: each part form-urlencoded, then Base64 (RFC 6749 2.3.1).
        assert_eq!(h["authorization"], "Basic YytpZDpzJTNBeA==");
        assert_eq!(h["content-type"], "application/x-www-form-urlencoded");
        assert_eq!(
            form_decode(&body),
            [
                ("grant_type".to_owned(), "refresh_token".to_owned()),
                ("refresh_token".to_owned(), "r t".to_owned()),
                ("resource".to_owned(), "https://mcp.example/mcp".to_owned()),
            ]
        );
        let (h, body) = endpoint(&fetcher, &secret, TokenEndpointAuth::ClientSecretPost)
            .request(&grant())
            .unwrap();
        assert!(h.get("authorization").is_none());
        assert_eq!(
            form_decode(&body)[3..],
            [
                ("client_id".to_owned(), "c id".to_owned()),
                ("client_secret".to_owned(), "s:x".to_owned()),
            ]
        );
        let public = RegisteredClient::public("pub");
        let (h, body) = endpoint(&fetcher, &public, TokenEndpointAuth::None)
            .request(&grant())
            .unwrap();
        assert!(h.get("authorization").is_none());
        assert_eq!(
            form_decode(&body)[3..],
            [("client_id".to_owned(), "pub".to_owned())]
        );
    }

    fn response(status: u16, body: Value) -> Response {
        Response {
            status: http::StatusCode::from_u16(status).unwrap(),
            headers: HeaderMap::new(),
            body: Bytes::from(body.to_string()),
        }
    }

    #[test]
    fn token_responses_and_errors() {
        let fetcher = Fetcher::new(crate::net::fetch::Limits {
            timeout: std::time::Duration::from_secs(1),
            max_bytes: 1024,
        })
        .unwrap();
        let client = RegisteredClient::public("pub");
        let e = endpoint(&fetcher, &client, TokenEndpointAuth::None);
        let requested = vec!["a".to_owned(), "b".to_owned()];
        let t = e
            .tokens(
                &grant(),
                &response(200, json!({"access_token": "at", "token_type": "bearer", "expires_in": 60, "refresh_token": "rt", "scope": "a"})),
                &requested,
                "https://mcp.example/mcp",
            )
            .unwrap();
        assert_eq!(t.access_token.expose(), "at");
        assert_eq!(t.token_type, "Bearer");
        assert_eq!(t.refresh_token.as_ref().map(Secret::expose), Some("rt"));
        assert_eq!(t.scopes, ["a"]);
        assert_eq!(t.requested_scopes, requested);
        assert_eq!(t.issuer, "https://as.example");
        let at = t.expires_at.unwrap();
        assert!(at >= now() + 59 && at <= now() + 61);
        // No scope in the answer: the requested ones; no expiry: none.
        let t = e
            .tokens(
                &grant(),
                &response(200, json!({"access_token": "at", "token_type": "DPoP"})),
                &requested,
                "r",
            )
            .unwrap();
        assert_eq!(
            (t.scopes.clone(), t.expires_at, t.token_type.as_str()),
            (requested.clone(), None, "DPoP")
        );
        for (body, why) in [
            (
                json!({"token_type": "Bearer"}),
                "the token response has no access_token",
            ),
            (
                json!({"access_token": "x"}),
                "the token response has no token_type",
            ),
            (
                json!({"access_token": "x", "token_type": "mac"}),
                "the token type \"mac\" is not one this client can use",
            ),
        ] {
            let err = e
                .tokens(&grant(), &response(200, body), &requested, "r")
                .unwrap_err();
            assert_eq!(err, OAuthError::protocol("https://as.example", why));
            assert!(!err.to_string().contains("\"x\""));
        }
        let err = e
            .tokens(
                &grant(),
                &response(
                    400,
                    json!({"error": "invalid_grant", "error_description": "expired"}),
                ),
                &requested,
                "r",
            )
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "the token endpoint of https://as.example refused the refresh_token request (HTTP 400): invalid_grant (expired)"
        );
        assert_eq!(error_code(&err), Some("invalid_grant"));
        let err = e
            .tokens(&grant(), &response(500, json!("oops")), &requested, "r")
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "the token endpoint of https://as.example refused the refresh_token request (HTTP 500)"
        );
    }
}
