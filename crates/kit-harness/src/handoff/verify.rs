//! `kit handoff verify` and the hook's Stop check: the stamp against the key, the journal, HEAD and
//! the files, and optionally the transcript proof.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result, EXIT_OK};
use crate::longrun::event::{Event, HandoffSaved};
use crate::longrun::Project;

use super::*;
use crate::digest::sha256_hex;

/// What [`check`] found: the checks that passed and the problems, one line each.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Checks that passed, e.g. `HEAD is still 1a2b3c4`.
    pub ok: Vec<String>,
    /// Problems, e.g. `lib.py changed since the handoff`; empty when the handoff verifies.
    pub problems: Vec<String>,
    /// Whether the file itself is not what `kit handoff save` wrote: its stamp id is not kit's
    /// keyed id (or there is no key, or the format is not keyed), the journal records no save
    /// of it or another sha256, or text follows the block. Its summary is not kit's to vouch
    /// for, whatever the tree says; `false` when only the tree moved on (HEAD, a file).
    pub forged: bool,
}

/// The checks of `kit handoff verify` without the transcript proof (DESIGN §11): nothing
/// follows the stamp block, the stamp id
/// matches its block and `summary`, HEAD is the stamp's commit, every fingerprint matches, and
/// no file changed since the base commit lacks a fingerprint. The hook's Stop check uses it too.
/// The key is the one [`key::project_path`] finds with `own_state_dir`.
///
/// Errors: [`Error::Internal`] when git fails; [`Error::Io`] when a file cannot be read.
pub fn check(
    project: &Project,
    handoff: &Handoff,
    stamp: &Stamp,
    own_state_dir: key::OwnStateDir,
) -> Result<Report> {
    let mut r = Report::default();
    if !handoff.trailing.is_empty() {
        let first = handoff.trailing.lines().next().unwrap_or("");
        r.forged = true;
        r.problems.push(format!(
            "text after the stamp block (line {}: `{}`): the stamp must end the file, so this text is not covered by it",
            handoff.trailing_line,
            first.chars().take(60).collect::<String>()
        ));
    }
    check_id(project, handoff, stamp, own_state_dir, &mut r)?;
    let head = git(&project.root, &["rev-parse", "HEAD"])?.trim().to_string();
    if head == stamp.commit {
        r.ok.push(format!("HEAD is still {}", short(&head)));
    } else {
        let count =
            git(&project.root, &["rev-list", "--count", &format!("{}..HEAD", stamp.commit)])
                .ok()
                .and_then(|s| s.trim().parse::<u64>().ok());
        r.problems.push(match count {
            Some(n) if n > 0 => format!(
                "HEAD moved: {n} new commit(s) since the handoff (saved at {}, HEAD is now {})",
                short(&stamp.commit),
                short(&head)
            ),
            _ => format!(
                "HEAD is {}, not the handoff's commit {}",
                short(&head),
                short(&stamp.commit)
            ),
        });
    }
    let mut mismatched = 0;
    for (p, want) in &stamp.files {
        let now = fingerprint(&project.root.join(p))?;
        if &now != want {
            mismatched += 1;
            r.problems.push(match (want.as_str(), now.as_str()) {
                (DELETED, _) => format!("{p} reappeared since the handoff"),
                (_, DELETED) => format!("{p} was deleted since the handoff"),
                _ => format!("{p} changed since the handoff"),
            });
        }
    }
    if mismatched == 0 {
        r.ok.push(format!("{} fingerprints match", stamp.files.len()));
    }
    // Read by content (see `changed_since`): no index bit or exclude rule set after the save
    // hides a file; a list git cannot make is a problem, never an empty list.
    let changed = match changed_since(project, &stamp.base_commit) {
        Ok(c) => c,
        Err(_)
            if git(
                &project.root,
                &["cat-file", "-e", &format!("{}^{{commit}}", stamp.base_commit)],
            )
            .is_err() =>
        {
            r.problems.push(format!(
                "the stamp's base commit {} is not a commit of this repository, so kit cannot list what changed since it",
                short(&stamp.base_commit)
            ));
            Vec::new()
        }
        Err(e) => {
            r.problems
                .push(format!("kit cannot list the files changed since the base commit: {e}"));
            Vec::new()
        }
    };
    for p in changed {
        if !stamp.files.contains_key(&p) {
            r.problems.push(format!(
                "{p} is new or changed since the handoff (it has no fingerprint in the stamp)"
            ));
        }
    }
    Ok(r)
}

/// The keyed stamp id and the journal's `handoff_saved` record, in `r`. Never names the id the
/// block should have carried: it says what differs instead.
fn check_id(
    project: &Project,
    handoff: &Handoff,
    stamp: &Stamp,
    own_state_dir: key::OwnStateDir,
    r: &mut Report,
) -> Result<()> {
    let before = r.problems.len();
    let saved = saved_event(project, &stamp.stamp);
    let summary_edited =
        saved.as_ref().is_some_and(|e| e.summary_sha256 != sha256_hex(handoff.summary.as_bytes()));
    if stamp.format_version != FORMAT_VERSION {
        r.problems.push(format!(
            "stamp format {} is not format {FORMAT_VERSION} (its id is not keyed, anyone can recompute it): save again with kit handoff save",
            stamp.format_version
        ));
    } else {
        let path = key::project_path(&project.root, own_state_dir)?;
        match crate::keys::load(&path)? {
            None => r.problems.push(format!(
                "no handoff key at {}: this stamp was not made by `kit handoff save` for this user (another user or machine, or written by hand)",
                path.display()
            )),
            Some(k) if stamp.id_verifies(&k, &handoff.summary) => {
                r.ok.push("stamp id is kit's keyed id of the block and the summary".into())
            }
            Some(_) => r.problems.push(format!(
                "stamp id {} is not kit's keyed id of this block and summary: {}",
                stamp.stamp,
                match &saved {
                    Some(_) if summary_edited => "the summary was edited after `kit handoff save`",
                    Some(_) => "the stamp block was edited after `kit handoff save`",
                    None => "written by hand (no `kit handoff save` journaled this stamp)",
                }
            )),
        }
    }
    match saved {
        None => r.problems.push(format!(
            "the journal (longrun/journal.jsonl) records no `kit handoff save` of stamp {}",
            stamp.stamp
        )),
        Some(e) if e.handoff_sha256 == handoff.sha256 => {
            r.ok.push("the journal records this save (sha256 of handoff.md matches)".into())
        }
        Some(_) => r.problems.push(format!(
            "handoff.md is not the file `kit handoff save` wrote for stamp {} (its sha256 differs from the journal's): {}",
            stamp.stamp,
            if summary_edited { "the summary was edited" } else { "the stamp block or the text around it was edited" }
        )),
    }
    r.forged |= r.problems.len() > before;
    Ok(())
}

/// The last `handoff_saved` journal event of stamp `id` (a damaged journal reads as none).
fn saved_event(project: &Project, id: &str) -> Option<HandoffSaved> {
    let read = crate::longrun::journal::read(&project.journal()).ok()?;
    read.entries.into_iter().rev().find_map(|e| match e.event {
        Event::HandoffSaved(s) if s.stamp == id => Some(s),
        _ => None,
    })
}

/// [`check`] on the handoff of the `longrun/` folder at `longrun` (for the hook). `None` when
/// there is no handoff with a stamp block that parses.
///
/// Errors: as [`check`].
pub fn check_longrun(longrun: &Path, own_state_dir: key::OwnStateDir) -> Result<Option<Report>> {
    let path = longrun.join("handoff.md");
    let Ok(text) = std::fs::read_to_string(&path) else { return Ok(None) };
    let Ok(handoff) = parse(&path, &text) else { return Ok(None) };
    let Some(stamp) = &handoff.stamp else { return Ok(None) };
    let root = longrun.parent().unwrap_or(longrun).to_path_buf();
    let project = Project { root, dir: longrun.to_path_buf() };
    check(&project, &handoff, stamp, own_state_dir).map(Some)
}

/// Where `kit handoff verify` looks for the save in a transcript.
#[derive(Clone, Debug)]
pub enum ProofSource {
    /// A transcript file.
    Transcript(PathBuf),
    /// A session id (or prefix) under the Claude Code roots.
    Session(String),
}

/// Options of `kit handoff verify`.
#[derive(Clone, Debug)]
pub struct VerifyOptions {
    /// Where kit runs.
    pub cwd: PathBuf,
    /// Also prove the save in this session's transcript.
    pub proof: Option<ProofSource>,
    /// Where a project that keeps its own state folder keeps the handoff key.
    pub own_state_dir: key::OwnStateDir,
}

/// `kit handoff verify`: print one line per check, then the verdict.
///
/// Errors: [`Error::Input`] naming `longrun/handoff.md` when it has no block, the block does not
/// parse, or any check fails (exit 2); [`Error::Usage`] outside an initialised repository.
pub fn verify(opts: &VerifyOptions, out: &mut dyn Write) -> Result<u8> {
    let project = Project::discover_initialised(&opts.cwd)?;
    let path = project.handoff();
    let shown = PathBuf::from(format!("{}/handoff.md", crate::longrun::DIR));
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(
                Error::input(&shown, None, "no handoff saved yet").with_hint("kit handoff save")
            )
        }
        Err(e) => return Err(Error::io(&path, e)),
    };
    let handoff = parse(&shown, &text)?;
    let Some(stamp) = handoff.stamp.clone() else {
        return Err(Error::input(&shown, None, "no stamp block: this handoff was not written by `kit handoff save` (a hand-written handoff proves nothing)")
            .with_hint("kit handoff save"));
    };
    let w =
        |out: &mut dyn Write, s: String| writeln!(out, "{s}").map_err(|e| Error::io("stdout", e));
    w(
        out,
        format!(
            "handoff stamp {} saved {} at commit {}",
            stamp.stamp,
            stamp.time,
            short(&stamp.commit)
        ),
    )?;
    let report = check(&project, &handoff, &stamp, opts.own_state_dir)?;
    for ok in &report.ok {
        w(out, format!("  ok   {ok}"))?;
    }
    let (mut problems, forged) = (report.problems, report.forged);
    if let Some(src) = &opts.proof {
        let transcript = match src {
            ProofSource::Transcript(p) => p.clone(),
            ProofSource::Session(id) => crate::transcript::discover::find_session(id)?,
        };
        match prove_in_transcript(&transcript, &stamp.stamp)? {
            Some(p) => w(
                out,
                format!(
                    "  ok   transcript line {} runs `kit handoff save` ({}); its result on line {} carries stamp {}",
                    p.call_line, p.tool_use_id, p.result_line, stamp.stamp
                ),
            )?,
            None => problems.push(format!(
                "{} holds no tool call that ran `kit handoff save` with a result carrying stamp {}: not saved in that session",
                transcript.display(),
                stamp.stamp
            )),
        }
    }
    for p in &problems {
        w(out, format!("  FAIL {p}"))?;
    }
    if problems.is_empty() {
        w(out, format!("handoff {} verifies", stamp.stamp))?;
        Ok(EXIT_OK)
    } else {
        Err(Error::input(
            shown,
            None,
            format!("handoff {} does not verify ({} problem(s))", stamp.stamp, problems.len()),
        )
        .with_hint(if forged { FORGED_NEXT } else { STALE_NEXT }))
    }
}

/// What to do about a handoff that is not the file `kit handoff save` wrote ([`Report::forged`]):
/// not to save it again, which would certify whatever summary is in it.
const FORGED_NEXT: &str = "do not trust this handoff: it is not what `kit handoff save` wrote. \
Check its summary against git log and longrun/journal.jsonl, and save again (kit handoff save) \
only a summary you checked yourself";

/// What to do about a handoff kit wrote whose tree moved on (HEAD, a file), or that another
/// session saved.
const STALE_NEXT: &str = "the tree moved on since the save: if that work is meant, update the summary in longrun/handoff.md, then kit handoff save; if not, undo it (git status and git diff show what changed)";

pub(super) fn short(commit: &str) -> &str {
    &commit[..commit.len().min(7)]
}
