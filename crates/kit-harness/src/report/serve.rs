//! `kit report --serve [ADDR]`: the report served on this machine's loopback and kept current
//! while the loop runs, until Ctrl-C (exit 0; SIGTERM and SIGHUP end it the same way).
//!
//! - **Loopback only.** ADDR is `PORT`, `IP`, `IP:PORT`, `[IPv6]:PORT` or `localhost[:PORT]`
//!   (default [`DEFAULT_ADDR`]; port 0 picks a free one). An address that is not loopback
//!   (`0.0.0.0`, a LAN address, a host name) is refused with exit 2: the page holds the loop's
//!   state and the figures of every session, for this machine's user only. Requests whose
//!   `Host` is not a loopback name for the port are answered 403, so that a web page
//!   elsewhere cannot read the report through a DNS name rebound to 127.0.0.1.
//! - **Two paths.** `GET`/`HEAD /` is the page, made as `kit report` makes it (the same
//!   function, so the same figures) with one note and a few lines of script added; `GET`/`HEAD
//!   /version` is the version of its inputs as text. Anything else is 404, another method 405.
//!   Nothing is fetched from elsewhere: the response's Content-Security-Policy allows only the
//!   page's inline styles and scripts and asking this server.
//! - **Refresh.** The version is a hash of the size and modification time of every file in
//!   `longrun/` and of every transcript file the page reports on (found as `kit measure` finds
//!   them, without reading them). The page asks for it every [`POLL`] and reloads when it
//!   differs from the version it was made from, so it follows the journal as it grows. The
//!   page is made again only when the version moved since the last one made.
//! - **HTTP** is tiny_http's (a small, synchronous server); requests are answered one at a
//!   time on the thread that watches for Ctrl-C.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;
use std::time::Duration;

use tiny_http::{Header, Method, Request, Response, Server};

use super::{page, ReportOptions};
use crate::error::{Error, ErrorReport, IoContext, Result, EXIT_OK};
use crate::longrun::Project;
use crate::transcript::discover;

/// Where `--serve` without ADDR listens.
pub const DEFAULT_ADDR: &str = "127.0.0.1:7411";

/// How often the served page asks whether its inputs changed.
pub(crate) const POLL: Duration = Duration::from_secs(2);

/// The path answering the version of the page's inputs.
const VERSION_PATH: &str = "/version";

/// How long the server waits for a request before looking for a stop signal again.
const TICK: Duration = Duration::from_millis(200);

/// Read `--serve`'s ADDR: `PORT`, `IP`, `IP:PORT`, `[IPv6]:PORT`, `localhost` or
/// `localhost:PORT`; a missing port is [`DEFAULT_ADDR`]'s.
///
/// Errors ([`Error::Usage`], exit 2): text that is none of these, a host name other than
/// `localhost`, and any address that is not loopback (127.0.0.0/8, ::1).
pub fn parse_addr(text: &str) -> Result<SocketAddr> {
    let default_port = DEFAULT_ADDR.rsplit(':').next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let t = text.trim();
    let addr = if let Ok(port) = t.parse::<u16>() {
        SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port)
    } else if let Ok(a) = t.parse::<SocketAddr>() {
        a
    } else if let Ok(ip) = t.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() {
        SocketAddr::new(ip, default_port)
    } else {
        let (host, port) = match t.rsplit_once(':') {
            Some((h, p)) => match p.parse::<u16>() {
                Ok(p) => (h, p),
                Err(_) => return Err(bad_addr(text)),
            },
            None => (t, default_port),
        };
        if host.contains('/') {
            return Err(bad_addr(text));
        }
        if !host.eq_ignore_ascii_case("localhost") {
            return Err(Error::usage(format!(
                "--serve {text}: {host} is not an IP address; kit serves the report only on \
                 this machine's loopback"
            ))
            .with_hint(LOOPBACK_HINT));
        }
        SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port)
    };
    if !addr.ip().is_loopback() {
        return Err(Error::usage(format!(
            "--serve {text}: {} is not a loopback address; the report shows the loop's state \
             and every session's figures, so kit serves it only to this machine",
            addr.ip()
        ))
        .with_hint(LOOPBACK_HINT));
    }
    Ok(addr)
}

/// ADDR that is no address; when it looks like a PATH, how to give both.
fn bad_addr(text: &str) -> Error {
    let e = Error::usage(format!(
        "--serve {text}: not an address (PORT, IP:PORT or localhost:PORT); a PATH to report on \
         goes before --serve"
    ));
    if text.contains(std::path::MAIN_SEPARATOR) || Path::new(text).exists() {
        e.with_hint(format!(
            "kit report {text} --serve, or kit report --serve 127.0.0.1:PORT {text}"
        ))
    } else {
        e.with_hint(LOOPBACK_HINT)
    }
}

/// The version of the page's inputs: a hash (16 hex digits) of the name, size and
/// modification time of every file directly in `longrun/` (the journal, goal.md,
/// progress.md…) and of every transcript file under the report's PATHs. Files are only looked
/// at, never read. A PATH that went away changes it too (its error is hashed).
pub(crate) fn version(opts: &ReportOptions) -> String {
    let mut h = DefaultHasher::new();
    if let Ok(p) = Project::discover_initialised(&opts.cwd) {
        let mut entries: Vec<_> = std::fs::read_dir(&p.dir)
            .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        entries.sort();
        for e in &entries {
            stat(e, &mut h);
        }
    }
    let mut damage = crate::transcript::Damage::default();
    match discover::discover(&opts.paths, &mut damage) {
        Ok(jobs) => {
            for f in jobs.iter().flat_map(|j| j.files()) {
                stat(f, &mut h);
            }
        }
        Err(e) => e.to_string().hash(&mut h),
    }
    damage.unreadable.len().hash(&mut h);
    format!("{:016x}", h.finish())
}

/// Hash a file's path, size and modification time (ns), or its absence.
fn stat(path: &Path, h: &mut DefaultHasher) {
    path.hash(h);
    match std::fs::metadata(path) {
        Ok(m) => {
            m.len().hash(h);
            m.modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|d| d.as_nanos())
                .hash(h);
        }
        Err(e) => e.kind().to_string().hash(h),
    }
}

/// The page last made and the version it was made from.
struct Made {
    version: String,
    html: Vec<u8>,
}

/// Serve the report on `addr` until a stop signal. Prints the URL on the first line of `out`,
/// then what the page holds (as `kit report` says it); `--open` opens the URL.
///
/// Errors: an address that cannot be listened on (in use: [`Error::Usage`] naming a free
/// choice), and those of `kit report` when the page is first made (a PATH that does not
/// exist). Later failures to make the page are answered 500 with the error and printed, and
/// serving goes on.
pub(crate) fn serve(opts: &ReportOptions, addr: SocketAddr, out: &mut dyn Write) -> Result<u8> {
    // Before anything starts a thread (tiny_http's, rayon's pool): see signals::Stop.
    let stop = crate::signals::Stop::install();
    let server = Server::http(addr).map_err(|e| {
        let in_use = e
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::AddrInUse);
        let err = Error::usage(format!("kit report --serve: cannot listen on {addr}: {e}"));
        if in_use {
            err.with_hint(format!(
                "another program (another kit report --serve?) listens there; name another \
                 port, or let the system pick a free one: kit report --serve {}:0",
                addr.ip()
            ))
        } else {
            err.with_hint(LOOPBACK_HINT)
        }
    })?;
    let bound = server.server_addr().to_ip().unwrap_or(addr);
    let project = Project::discover_initialised(&opts.cwd).ok();
    // Made once before saying where, so that a bad PATH fails as `kit report` fails.
    let (made, scan, doc) = make(opts, project.as_ref())?;
    let mut made = made;
    let stdout = Path::new("stdout");
    let url = format!("http://{bound}/");
    writeln!(out, "serving the report on {url} (Ctrl-C stops)").at(stdout)?;
    super::summary(out, None, &scan, &doc, project.is_some()).at(stdout)?;
    writeln!(
        out,
        "  refresh: the page reloads itself when the journal or a transcript changes (asked every {})",
        crate::units::format_duration(POLL)
    )
    .at(stdout)?;
    if opts.open {
        super::open(url.as_ref(), out).at(stdout)?;
    }
    out.flush().at(stdout)?;
    drop((scan, doc));
    let hosts = allowed_hosts(bound);
    let signal = loop {
        if let Some(sig) = stop.requested() {
            break sig;
        }
        let req = match server.recv_timeout(TICK) {
            Ok(Some(r)) => r,
            Ok(None) => continue,
            Err(e) => return Err(Error::io(format!("http://{bound}/"), e)),
        };
        answer(req, opts, &hosts, &mut made, out);
    };
    writeln!(out, "stopped serving ({signal})").at(stdout)?;
    Ok(EXIT_OK)
}

/// Make the page for the current inputs: (the page, the scan, the measure document).
fn make(
    opts: &ReportOptions,
    project: Option<&Project>,
) -> Result<(Made, crate::measure::Scan, serde_json::Value)> {
    let version = version(opts);
    let live = page::Live {
        version: version.clone(),
        version_path: VERSION_PATH,
        poll_ms: POLL.as_millis() as u64,
    };
    let (html, scan, doc) = super::with_page(opts, project, Some(live), |p| {
        let mut html = Vec::new();
        page::write_document(p, &mut html).at(Path::new("page"))?;
        Ok(html)
    })?;
    Ok((Made { version, html }, scan, doc))
}

/// The `Host` values a request may carry: the loopback names for the bound port.
fn allowed_hosts(bound: SocketAddr) -> Vec<String> {
    let port = bound.port();
    let mut hosts: Vec<String> =
        ["127.0.0.1", "localhost", "[::1]"].iter().map(|h| format!("{h}:{port}")).collect();
    hosts.push(bound.to_string());
    hosts
}

/// Answer one request; a client that went away meanwhile is not an error.
fn answer(
    req: Request,
    opts: &ReportOptions,
    hosts: &[String],
    made: &mut Made,
    out: &mut dyn Write,
) {
    let host = req.headers().iter().find(|h| h.field.equiv("Host")).map(|h| h.value.to_string());
    if host.is_some_and(|h| !hosts.iter().any(|a| a.eq_ignore_ascii_case(&h))) {
        let _ = req.respond(text(403, "kit report --serve answers only to loopback host names\n"));
        return;
    }
    let path = req.url().split(['?', '#']).next().unwrap_or("").to_string();
    if path != "/" && path != VERSION_PATH {
        let _ = req.respond(text(404, "not found: kit report --serve has / and /version\n"));
        return;
    }
    if !matches!(req.method(), Method::Get | Method::Head) {
        let _ = req.respond(with(text(405, "only GET and HEAD\n"), "Allow", "GET, HEAD"));
        return;
    }
    if path == VERSION_PATH {
        let _ = req.respond(text(200, &version(opts)));
        return;
    }
    if version(opts) != made.version {
        let project = Project::discover_initialised(&opts.cwd).ok();
        match make(opts, project.as_ref()) {
            Ok((m, _, _)) => *made = m,
            Err(e) => {
                let report = ErrorReport(&e).to_string();
                let _ = writeln!(out, "  could not make the page: {report}");
                let _ = req.respond(text(500, &format!("kit report: {report}\n")));
                return;
            }
        }
    }
    let r = Response::from_data(made.html.clone());
    let r = with(r, "Content-Type", "text/html; charset=utf-8");
    let _ = req.respond(no_store(with(r, "Content-Security-Policy", CSP)));
}

/// A plain-text response with status `code`.
fn text(code: u16, body: &str) -> Response<std::io::Cursor<Vec<u8>>> {
    let r = Response::from_string(body).with_status_code(code);
    no_store(with(r, "Content-Type", "text/plain; charset=utf-8"))
}

/// The headers every answer carries: never cached, never sniffed, no referrer.
fn no_store<R: std::io::Read>(r: Response<R>) -> Response<R> {
    let r = with(r, "Cache-Control", "no-store");
    let r = with(r, "X-Content-Type-Options", "nosniff");
    with(r, "Referrer-Policy", "no-referrer")
}

/// `r` with the header `name: value` (constant ASCII text here; one that were not would be
/// left out rather than fail the answer).
fn with<R: std::io::Read>(r: Response<R>, name: &str, value: &str) -> Response<R> {
    match Header::from_bytes(name.as_bytes(), value.as_bytes()) {
        Ok(h) => r.with_header(h),
        Err(()) => r,
    }
}

/// The page may use its own inline styles and scripts and ask this server, nothing else.
const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; \
                   connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; \
                   frame-ancestors 'none'";

/// What to do instead of a non-loopback address.
const LOOPBACK_HINT: &str = "serve on loopback (kit report --serve 127.0.0.1:PORT, or :0 for a \
free port); to look from another machine, forward the port over ssh: ssh -L PORT:127.0.0.1:PORT HOST";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serve_addresses_are_loopback_or_refused() {
        let ok = [
            ("8080", "127.0.0.1:8080"),
            ("127.0.0.1:0", "127.0.0.1:0"),
            ("127.0.0.1", DEFAULT_ADDR),
            ("127.1.2.3:9", "127.1.2.3:9"),
            ("[::1]:8080", "[::1]:8080"),
            ("::1", "[::1]:7411"),
            ("[::1]", "[::1]:7411"),
            ("localhost", DEFAULT_ADDR),
            ("LOCALHOST:99", "127.0.0.1:99"),
        ];
        for (text, want) in ok {
            assert_eq!(parse_addr(text).unwrap().to_string(), want, "{text}");
        }
        let refused = [
            ("0.0.0.0", "0.0.0.0 is not a loopback address"),
            ("0.0.0.0:8080", "0.0.0.0 is not a loopback address"),
            ("192.168.1.5:80", "192.168.1.5 is not a loopback address"),
            ("[::]:80", ":: is not a loopback address"),
            ("example.com:80", "example.com is not an IP address"),
            ("localhost:http", "not an address"),
            ("/home/me/.claude", "a PATH to report on goes before --serve"),
            ("65536", "65536 is not an IP address"),
        ];
        for (text, want) in refused {
            let e = parse_addr(text).unwrap_err();
            assert_eq!(e.exit_code(), crate::error::EXIT_BAD_INPUT, "{text}");
            assert!(e.to_string().contains(want), "{text}: {e}");
        }
    }

    #[test]
    fn the_version_moves_when_a_transcript_grows_or_appears() {
        let d = tempfile::tempdir().unwrap();
        let t = d.path().join("t");
        std::fs::create_dir(&t).unwrap();
        std::fs::write(t.join("a.jsonl"), "{}\n").unwrap();
        let opts =
            ReportOptions { cwd: d.path().into(), paths: vec![t.clone()], ..Default::default() };
        let v1 = version(&opts);
        assert_eq!(v1, version(&opts), "stable while nothing changes");
        assert_eq!(v1.len(), 16);
        std::fs::write(t.join("a.jsonl"), "{}\n{}\n").unwrap();
        let v2 = version(&opts);
        assert_ne!(v1, v2, "a transcript grew");
        std::fs::write(t.join("b.jsonl"), "{}\n").unwrap();
        assert_ne!(v2, version(&opts), "a transcript appeared");
    }
}
