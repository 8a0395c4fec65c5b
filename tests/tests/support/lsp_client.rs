//! A language-server client for the tests: runs `loam lsp` as a process and speaks JSON-RPC
//! with the protocol's framing (`Content-Length` headers) over its standard input and output.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

/// How long a test waits for one answer before it fails: planning is not involved, so a
/// second is already slow; ten leave room for a loaded CI machine.
const PATIENCE: Duration = Duration::from_secs(10);

/// A running `loam lsp` and what it sent that nobody has read yet.
pub struct LspClient {
    child: Child,
    stdin: ChildStdin,
    messages: Receiver<Value>,
    /// Notifications received while waiting for something else, oldest first.
    pending: Vec<Value>,
    next_id: i64,
}

/// Reads one framed message: headers, a blank line, `Content-Length` bytes of JSON.
fn read_message(reader: &mut impl BufRead) -> Option<Value> {
    let mut length = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(n) = line.strip_prefix("Content-Length: ") {
            length = n.parse::<usize>().ok();
        }
    }
    let mut body = vec![0; length?];
    reader.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}

impl LspClient {
    /// Starts `loam [args] lsp` in `dir` and completes the handshake with `root` as the
    /// workspace folder; returns the client and the server's `initialize` result.
    pub fn start(dir: &Path, root: &Path, args: &[&str]) -> (Self, Value) {
        let mut child = Command::new(env!("CARGO_BIN_EXE_loam-under-test"))
            .args(args)
            .arg("lsp")
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("loam lsp starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (sender, messages) = channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            while let Some(message) = read_message(&mut reader) {
                if sender.send(message).is_err() {
                    break;
                }
            }
        });
        let mut client = LspClient {
            child,
            stdin,
            messages,
            pending: Vec::new(),
            next_id: 1,
        };
        let root_uri = file_uri(root);
        let result = client.request(
            "initialize",
            json!({
                "processId": null,
                "rootUri": root_uri,
                "capabilities": {},
                "workspaceFolders": [{"uri": root_uri, "name": "root"}],
            }),
        );
        client.notify("initialized", json!({}));
        (client, result)
    }

    fn send(&mut self, message: &Value) {
        let body = message.to_string();
        write!(self.stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).unwrap();
        self.stdin.flush().unwrap();
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends a notification.
    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a request and waits for its response (the whole response, `result` or `error`).
    pub fn request_raw(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let deadline = Instant::now() + PATIENCE;
        loop {
            let message = self
                .next(deadline)
                .unwrap_or_else(|| panic!("no answer to {method}"));
            if message.get("id") == Some(&json!(id)) && message.get("method").is_none() {
                return message;
            }
            self.pending.push(message);
        }
    }

    /// Sends a request and returns its `result`, failing on an error response.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let response = self.request_raw(method, params);
        assert!(response.get("error").is_none(), "{method}: {response}");
        response["result"].clone()
    }

    fn next(&mut self, deadline: Instant) -> Option<Value> {
        let left = deadline.saturating_duration_since(Instant::now());
        self.messages.recv_timeout(left).ok()
    }

    /// Waits for the next notification `method` whose parameters satisfy `accept`, and
    /// returns its parameters.
    pub fn wait_for(&mut self, method: &str, accept: impl Fn(&Value) -> bool) -> Value {
        if let Some(i) = self
            .pending
            .iter()
            .position(|m| m["method"] == method && accept(&m["params"]))
        {
            return self.pending.remove(i)["params"].clone();
        }
        let deadline = Instant::now() + PATIENCE;
        loop {
            let message = self
                .next(deadline)
                .unwrap_or_else(|| panic!("no {method} arrived"));
            if message["method"] == method && accept(&message["params"]) {
                return message["params"].clone();
            }
            self.pending.push(message);
        }
    }

    /// Opens a document and returns the diagnostics published for it (of version 1).
    pub fn open(&mut self, uri: &str, text: &str) -> Vec<Value> {
        self.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "loam", "version": 1, "text": text}}),
        );
        self.diagnostics(uri, 1)
    }

    /// Waits for the diagnostics of `uri` at `version`.
    pub fn diagnostics(&mut self, uri: &str, version: i64) -> Vec<Value> {
        let params = self.wait_for("textDocument/publishDiagnostics", |p| {
            p["uri"] == uri && p["version"] == version
        });
        params["diagnostics"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// Shuts the server down as a client does and returns its exit code.
    pub fn shut_down(mut self) -> Option<i32> {
        self.request("shutdown", Value::Null);
        self.notify("exit", Value::Null);
        let deadline = Instant::now() + PATIENCE;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        None
    }
}

impl Drop for LspClient {
    fn drop(&mut self) {
        // A failed test must not leave the server running.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The `file:` URI of an absolute path (the tests' paths need no escapes but spaces).
pub fn file_uri(path: &Path) -> String {
    format!("file://{}", path.to_string_lossy().replace(' ', "%20"))
}
