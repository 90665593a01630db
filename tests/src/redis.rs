//! A real Redis for the tests that need one: Debian's `redis-server`, started on a free port,
//! without persistence, stopped when dropped. scripts/test.sh installs the package; a test
//! that needs Redis fails (never skips) where it is missing.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A `redis-server` of this test.
#[derive(Debug)]
pub struct Redis {
    port: u16,
    child: Option<Child>,
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
        };
        redis.up();
        redis
    }

    /// A Redis that is not running yet (a server started against it finds it down): its
    /// port is chosen, [`Redis::up`] starts it.
    pub fn down() -> Redis {
        Redis {
            port: free_port(),
            child: None,
        }
    }

    /// Its URL.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// Starts it (again) on its port and waits until it answers.
    pub fn up(&mut self) {
        assert!(self.child.is_none(), "Redis is running already");
        let child = Command::new("redis-server")
            .args([
                "--port",
                &self.port.to_string(),
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
        let out = Command::new("redis-cli")
            .args(["-p", &self.port.to_string()])
            .args(args)
            .stderr(Stdio::null())
            .output()
            .ok()?;
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
