//! A real Redis for the tests that need one: Debian's `redis-server`, started on a free port,
//! without persistence, stopped when dropped. scripts/test.sh installs the package; a test
//! that needs Redis fails (never skips) where it is missing.
//!
//! [`Redis::start_tls`] serves TLS only, with a certificate for 127.0.0.1 signed by a CA made
//! for the test (rcgen), and asks clients for a certificate of that CA when they have one;
//! [`Redis::require_auth`] and [`Redis::add_user`] turn on ACL users, as a Redis on a shared
//! network has them.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The TLS material of a [`Redis::start_tls`]: a CA made for the test, the server's certificate
/// for 127.0.0.1, and a client certificate, all as PEM (and as files for `redis-server`).
#[derive(Debug)]
pub struct Tls {
    dir: PathBuf,
    /// The test CA's certificate.
    pub ca_pem: String,
    /// A client certificate the CA signed, and its key.
    pub client_cert_pem: String,
    pub client_key_pem: String,
    /// Another CA, which signed nothing of this Redis.
    pub other_ca_pem: String,
}

impl Tls {
    fn new(port: u16) -> Tls {
        use rcgen::{
            BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose,
        };
        let ca = |name: &str| {
            let key = KeyPair::generate().expect("a CA key");
            let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
            params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
            params.distinguished_name.push(DnType::CommonName, name);
            params.key_usages = vec![
                KeyUsagePurpose::KeyCertSign,
                KeyUsagePurpose::CrlSign,
                KeyUsagePurpose::DigitalSignature,
            ];
            let cert = params.self_signed(&key).expect("a self-signed CA");
            (cert.pem(), Issuer::new(params, key))
        };
        let (ca_pem, issuer) = ca("sake test CA");
        let (other_ca_pem, _) = ca("another CA");
        let leaf = |names: Vec<String>, name: &str| {
            let key = KeyPair::generate().expect("a key");
            let mut params = CertificateParams::new(names).expect("params");
            params.distinguished_name.push(DnType::CommonName, name);
            let cert = params.signed_by(&key, &issuer).expect("a certificate");
            (cert.pem(), key.serialize_pem())
        };
        let (server_cert, server_key) = leaf(
            vec!["127.0.0.1".into(), "localhost".into()],
            "redis on 127.0.0.1",
        );
        let (client_cert_pem, client_key_pem) = leaf(Vec::new(), "a sake replica");
        let dir =
            std::env::temp_dir().join(format!("sake-redis-tls-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a directory for the TLS files");
        for (name, text) in [
            ("ca.pem", &ca_pem),
            ("server.pem", &server_cert),
            ("server.key", &server_key),
            ("client.pem", &client_cert_pem),
            ("client.key", &client_key_pem),
        ] {
            std::fs::write(dir.join(name), text).expect("a TLS file written");
        }
        Tls {
            dir,
            ca_pem,
            client_cert_pem,
            client_key_pem,
            other_ca_pem,
        }
    }

    fn file(&self, name: &str) -> String {
        self.dir.join(name).to_string_lossy().into_owned()
    }
}

impl Drop for Tls {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A `redis-server` of this test.
#[derive(Debug)]
pub struct Redis {
    port: u16,
    child: Option<Child>,
    tls: Option<Tls>,
    /// Who `redis-cli` signs in as, once the default user is off.
    admin: Option<(String, String)>,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

impl Redis {
    /// Starts one on a free port and waits until it answers.
    pub fn start() -> Redis {
        let mut redis = Redis {
            port: free_port(),
            child: None,
            tls: None,
            admin: None,
        };
        redis.up();
        redis
    }

    /// Starts one that speaks TLS only (see [`Tls`]): clients that present a certificate
    /// must present one the test CA signed.
    pub fn start_tls() -> Redis {
        let port = free_port();
        let mut redis = Redis {
            port,
            child: None,
            tls: Some(Tls::new(port)),
            admin: None,
        };
        redis.up();
        redis
    }

    /// The TLS material of a [`Redis::start_tls`].
    pub fn tls(&self) -> &Tls {
        self.tls.as_ref().expect("a Redis started with start_tls")
    }

    /// Turns the default user off: from now on every client signs in as an ACL user
    /// (`redis-cli` as an administrator this makes).
    pub fn require_auth(&mut self) {
        let pass = "admin-password-of-the-test";
        let out = self.cli(&[
            "ACL",
            "SETUSER",
            "admin",
            "on",
            &format!(">{pass}"),
            "~*",
            "&*",
            "+@all",
        ]);
        assert_eq!(
            out.as_deref().map(str::trim),
            Some("OK"),
            "ACL SETUSER admin"
        );
        let out = self.cli(&["ACL", "SETUSER", "default", "off"]);
        assert_eq!(
            out.as_deref().map(str::trim),
            Some("OK"),
            "ACL SETUSER default off"
        );
        self.admin = Some(("admin".into(), pass.into()));
        assert_eq!(
            self.cli(&["PING"]).as_deref().map(str::trim),
            Some("PONG"),
            "the administrator signs in"
        );
    }

    /// Adds (or replaces) the ACL user `name` with `password`, allowed only `rules` (ACL
    /// SETUSER rules, after `resetkeys resetchannels -@all`).
    pub fn add_user(&self, name: &str, password: &str, rules: &[&str]) {
        let pass = format!(">{password}");
        let mut args = vec!["ACL", "SETUSER", name, "reset", "on", &pass];
        args.extend_from_slice(rules);
        let out = self.cli(&args);
        assert_eq!(
            out.as_deref().map(str::trim),
            Some("OK"),
            "ACL SETUSER {name}: {args:?}"
        );
    }

    /// A Redis that is not running yet (a server started against it finds it down): its
    /// port is chosen, [`Redis::up`] starts it.
    pub fn down() -> Redis {
        Redis {
            port: free_port(),
            child: None,
            tls: None,
            admin: None,
        }
    }

    /// Its URL (`rediss://` for one started with [`Redis::start_tls`]).
    pub fn url(&self) -> String {
        let scheme = if self.tls.is_some() {
            "rediss"
        } else {
            "redis"
        };
        format!("{scheme}://127.0.0.1:{}/", self.port)
    }

    /// Its URL with an ACL user and password.
    pub fn url_as(&self, user: &str, password: &str) -> String {
        let scheme = if self.tls.is_some() {
            "rediss"
        } else {
            "redis"
        };
        format!("{scheme}://{user}:{password}@127.0.0.1:{}/", self.port)
    }

    /// Starts it (again) on its port and waits until it answers.
    pub fn up(&mut self) {
        assert!(self.child.is_none(), "Redis is running already");
        let port = self.port.to_string();
        let mut args: Vec<String> = Vec::new();
        match &self.tls {
            None => args.extend(["--port".into(), port]),
            Some(tls) => args.extend([
                "--port".into(),
                "0".into(),
                "--tls-port".into(),
                port,
                "--tls-cert-file".into(),
                tls.file("server.pem"),
                "--tls-key-file".into(),
                tls.file("server.key"),
                "--tls-ca-cert-file".into(),
                tls.file("ca.pem"),
                "--tls-auth-clients".into(),
                "optional".into(),
            ]),
        }
        let child = Command::new("redis-server")
            .args(&args)
            .args([
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--protected-mode",
                "no",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start redis-server ({e}): install Debian's package (apt-get install redis-server); scripts/test.sh does"
                )
            });
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if self.cli(&["PING"]).is_some_and(|o| o.trim() == "PONG") {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("redis-server on port {} did not answer PING", self.port);
    }

    /// Kills it (as a crash would: no shutdown, nothing saved).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Runs a command with `redis-cli`; its output, `None` when it could not run.
    pub fn cli(&self, args: &[&str]) -> Option<String> {
        let mut cli = Command::new("redis-cli");
        cli.args(["-p", &self.port.to_string()]);
        if let Some(tls) = &self.tls {
            cli.args(["--tls", "--cacert", &tls.file("ca.pem")]);
            cli.args([
                "--cert",
                &tls.file("client.pem"),
                "--key",
                &tls.file("client.key"),
            ]);
        }
        if let Some((user, pass)) = &self.admin {
            cli.args(["--user", user, "--pass", pass, "--no-auth-warning"]);
        }
        let out = cli.args(args).stderr(Stdio::null()).output().ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
            .filter(|o| !o.starts_with("Could not connect"))
    }

    /// Makes it answer no client for `ms` milliseconds (`CLIENT PAUSE`): a slow Redis.
    pub fn pause(&self, ms: u64) {
        let out = self.cli(&["CLIENT", "PAUSE", &ms.to_string(), "ALL"]);
        assert_eq!(out.as_deref().map(str::trim), Some("OK"), "CLIENT PAUSE");
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.kill();
    }
}
