//! A local HTTP server for download tests: serves fixture bytes with Range support, and with
//! faults on request. Each connection is one request (`Connection: close`).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Debug, Clone, PartialEq)]
/// How the server misbehaves when serving one path.
pub enum Fault {
    /// Serves the file correctly, honouring `Range: bytes=N-`.
    None,
    /// The connection closes once the file's first `at` bytes are sent, for the next `times`
    /// requests.
    Drop {
        /// Byte offset in the file at which the connection closes.
        at: usize,
        /// Requests left that drop; after them the file is served normally.
        times: usize,
    },
    /// The right length, the wrong bytes.
    WrongBody,
    /// 404 even though the path is registered.
    NotFound,
    /// 503 for the next `times` requests.
    ServerError {
        /// Requests left that get 503; after them the file is served normally.
        times: usize,
    },
    /// 302 to this location.
    Redirect(String),
    /// Range is ignored: always 200 and the whole file.
    NoRange,
    /// `chunk` bytes every `every`.
    Slow {
        /// Bytes written per write.
        chunk: usize,
        /// Pause after each chunk.
        every: Duration,
    },
    /// 200 and the file over and over, without a Content-Length, until the client hangs up
    /// (or [`ENDLESS_CAP`] bytes, so that a client that never stops cannot fill the disk).
    Endless,
}

/// Where an endless body ends after all.
pub const ENDLESS_CAP: usize = 64 << 20;

/// One request the server saw.
#[derive(Debug, Clone, PartialEq)]
pub struct Seen {
    /// The request target as sent: a path, a whole URL when proxied, or `CONNECT host:port`.
    pub path: String,
    /// The start of a `Range: bytes=N-` header.
    pub range_start: Option<u64>,
}

#[derive(Default)]
struct Routes {
    files: HashMap<String, (Vec<u8>, Fault)>,
    seen: Vec<Seen>,
}

/// A running test server on 127.0.0.1 at a free port; it runs until the test process ends.
pub struct AssetServer {
    port: u16,
    routes: Arc<Mutex<Routes>>,
}

impl AssetServer {
    /// Binds a free local port and serves on background threads, one per connection.
    pub fn start() -> AssetServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("binding the test server");
        let port = listener.local_addr().expect("its address").port();
        let routes = Arc::new(Mutex::new(Routes::default()));
        let shared = Arc::clone(&routes);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let routes = Arc::clone(&shared);
                std::thread::spawn(move || {
                    // A client that hangs up mid-body is what some tests do.
                    let _ = handle(stream, &routes);
                });
            }
        });
        AssetServer { port, routes }
    }

    /// `http://127.0.0.1:<port>`
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Serves `body` at `path` (e.g. "/repo/rmvpe.pt") with `fault`, replacing what was there.
    pub fn serve(&self, path: &str, body: &[u8], fault: Fault) {
        self.lock()
            .files
            .insert(path.to_string(), (body.to_vec(), fault));
    }

    /// Every request received so far, in order of arrival.
    pub fn seen(&self) -> Vec<Seen> {
        self.lock().seen.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Routes> {
        self.routes.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn handle(stream: TcpStream, routes: &Mutex<Routes>) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let (target, range_start) = read_request(&mut reader)?;
    let mut stream = stream;
    let target = match target.strip_prefix("CONNECT ") {
        // As a proxy: the tunnel's first request is served as if it came directly.
        Some(tunnel) => {
            record(routes, &format!("CONNECT {tunnel}"), None);
            stream.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")?;
            let (target, range_start) = read_request(&mut reader)?;
            return serve(stream, routes, &target, range_start);
        }
        None => target,
    };
    serve(stream, routes, &target, range_start)
}

/// The request target (`CONNECT host:port` for a tunnel) and the start of its Range header.
fn read_request(reader: &mut impl BufRead) -> std::io::Result<(String, Option<u64>)> {
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut words = line.split_whitespace();
    let method = words.next().unwrap_or_default();
    let target = words.next().unwrap_or("/").to_string();
    let target = if method == "CONNECT" {
        format!("CONNECT {target}")
    } else {
        target
    };
    let mut range_start = None;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("range")
        {
            range_start = value
                .trim()
                .strip_prefix("bytes=")
                .and_then(|r| r.trim_end_matches('-').parse().ok());
        }
    }
    Ok((target, range_start))
}

fn record(routes: &Mutex<Routes>, path: &str, range_start: Option<u64>) {
    let mut routes = routes.lock().unwrap_or_else(|p| p.into_inner());
    routes.seen.push(Seen {
        path: path.to_string(),
        range_start,
    });
}

fn serve(
    stream: TcpStream,
    routes: &Mutex<Routes>,
    target: &str,
    range_start: Option<u64>,
) -> std::io::Result<()> {
    record(routes, target, range_start);
    // A proxied request names the whole URL: route by its path.
    let path = match target.split_once("://") {
        Some((_, rest)) => rest.find('/').map_or("/", |i| &rest[i..]).to_string(),
        None => target.to_string(),
    };
    let (body, fault) = {
        let mut routes = routes.lock().unwrap_or_else(|p| p.into_inner());
        let Some((body, fault)) = routes.files.get_mut(&path) else {
            drop(routes);
            return respond(stream, "404 Not Found", &[], b"not found");
        };
        let now = fault.clone();
        match fault {
            Fault::Drop { times, .. } | Fault::ServerError { times } => {
                *times = times.saturating_sub(1);
                if *times == 0 {
                    *fault = Fault::None;
                }
            }
            _ => {}
        }
        (body.clone(), now)
    };
    let mut stream = stream;
    match fault {
        Fault::NotFound => respond(stream, "404 Not Found", &[], b"not found"),
        Fault::ServerError { .. } => respond(stream, "503 Service Unavailable", &[], b"busy"),
        Fault::Redirect(to) => respond(stream, "302 Found", &[("Location", to)], b""),
        Fault::WrongBody => {
            let wrong: Vec<u8> = body.iter().map(|b| b ^ 0x5a).collect();
            respond(stream, "200 OK", &[], &wrong)
        }
        Fault::NoRange => respond(stream, "200 OK", &[], &body),
        Fault::Endless => {
            write_head(&mut stream, "200 OK", &[], None)?;
            for _ in 0..ENDLESS_CAP / body.len().max(1) {
                stream.write_all(&body)?;
            }
            Ok(())
        }
        _ => {
            let start = range_start.unwrap_or(0) as usize;
            if start >= body.len() && start > 0 {
                return respond(stream, "416 Range Not Satisfiable", &[], b"");
            }
            let status = if start > 0 {
                "206 Partial Content"
            } else {
                "200 OK"
            };
            let range = format!("bytes {start}-{}/{}", body.len() - 1, body.len());
            let rest = &body[start..];
            write_head(
                &mut stream,
                status,
                &[("Content-Range", range)],
                Some(rest.len()),
            )?;
            match fault {
                Fault::Drop { at, .. } => {
                    stream.write_all(&rest[..at.saturating_sub(start).min(rest.len())])?;
                    stream.flush()?;
                    stream.shutdown(std::net::Shutdown::Both)
                }
                Fault::Slow { chunk, every } => {
                    for piece in rest.chunks(chunk) {
                        stream.write_all(piece)?;
                        stream.flush()?;
                        std::thread::sleep(every);
                    }
                    Ok(())
                }
                _ => stream.write_all(rest),
            }
        }
    }
}

fn write_head(
    stream: &mut TcpStream,
    status: &str,
    headers: &[(&str, String)],
    length: Option<usize>,
) -> std::io::Result<()> {
    let mut head = format!("HTTP/1.1 {status}\r\nConnection: close\r\n");
    if let Some(length) = length {
        head.push_str(&format!("Content-Length: {length}\r\n"));
    }
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())
}

fn respond(
    mut stream: TcpStream,
    status: &str,
    headers: &[(&str, String)],
    body: &[u8],
) -> std::io::Result<()> {
    write_head(&mut stream, status, headers, Some(body.len()))?;
    stream.write_all(body)
}
