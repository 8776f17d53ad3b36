//! A JSON *skimmer*: walks one object's fields and hands back each value's raw bytes, jumping
//! over strings with `memchr` instead of decoding them. Most of a transcript's bytes are tool
//! output, file contents and thinking that `kit measure` never needs; serde would still scan
//! them byte by byte. Why not a crate: the JSON parsers at hand (serde_json, its `RawValue`)
//! all validate and scan every byte of what they skip; this one only looks at quotes and
//! backslashes inside strings, so skipping a 1 MB tool result costs a `memchr2` pass.
//!
//! It checks structure (balanced brackets, closed strings, `key: value` with commas), not every
//! detail of JSON; a record it cannot walk is handed to serde, which decides (truncated or
//! malformed). The values kit does read (usage, compaction metadata) are parsed with serde.

/// The raw bytes of each top-level field of the object in `b`, in order: `f(key, value)`.
/// `key` is the key's raw bytes without quotes (escapes not decoded). Returns None if `b` is
/// not a well-formed object (as far as the skimmer checks).
pub fn fields<'a>(b: &'a [u8], mut f: impl FnMut(&'a [u8], &'a [u8])) -> Option<()> {
    let mut i = ws(b, 0);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i = ws(b, i + 1);
    if b.get(i) == Some(&b'}') {
        return (ws(b, i + 1) == b.len()).then_some(());
    }
    loop {
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let kend = string_end(b, i)?;
        let key = &b[i + 1..kend - 1];
        i = ws(b, kend);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i = ws(b, i + 1);
        let vend = value_end(b, i)?;
        f(key, &b[i..vend]);
        i = ws(b, vend);
        match b.get(i) {
            Some(b',') => i = ws(b, i + 1),
            Some(b'}') => return (ws(b, i + 1) == b.len()).then_some(()),
            _ => return None,
        }
    }
}

/// The elements of the array in `b`, raw: `f(element)`. None if not a well-formed array.
pub(crate) fn elements<'a>(b: &'a [u8], mut f: impl FnMut(&'a [u8])) -> Option<()> {
    let mut i = ws(b, 0);
    if b.get(i) != Some(&b'[') {
        return None;
    }
    i = ws(b, i + 1);
    if b.get(i) == Some(&b']') {
        return Some(());
    }
    loop {
        let end = value_end(b, i)?;
        f(&b[i..end]);
        i = ws(b, end);
        match b.get(i) {
            Some(b',') => i = ws(b, i + 1),
            Some(b']') => return Some(()),
            _ => return None,
        }
    }
}

/// The content of a raw JSON string value (`"…"`) if it has no escapes (borrowed as is).
pub fn plain_str(v: &[u8]) -> Option<&str> {
    let inner = v.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
    if memchr::memchr(b'\\', inner).is_some() {
        return None;
    }
    std::str::from_utf8(inner).ok()
}

/// The first bytes of a raw string's content (escapes left as they are): enough for prefix
/// tests such as `<command-`.
pub(crate) fn str_head(v: &[u8]) -> Option<&[u8]> {
    v.strip_prefix(b"\"")
}

fn ws(b: &[u8], mut i: usize) -> usize {
    while let Some(c) = b.get(i) {
        if !matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
            break;
        }
        i += 1;
    }
    i
}

/// `b[i]` is `"`: the index just past the closing quote. Looks for quotes only and counts the
/// backslashes before each: code and logs are full of `\n` escapes, which a search for both
/// bytes would stop at every few dozen bytes.
fn string_end(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    loop {
        let q = j + memchr::memchr(b'"', &b[j..])?;
        let mut n = 0;
        while q - n > i + 1 && b[q - n - 1] == b'\\' {
            n += 1;
        }
        if n.is_multiple_of(2) {
            return Some(q + 1);
        }
        j = q + 1;
    }
}

/// The index just past the value starting at `b[i]`.
fn value_end(b: &[u8], i: usize) -> Option<usize> {
    match *b.get(i)? {
        b'"' => string_end(b, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            while j < b.len() {
                match b[j] {
                    b'"' => {
                        j = string_end(b, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            None
        }
        _ => {
            let mut j = i;
            while j < b.len() && !matches!(b[j], b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
            {
                j += 1;
            }
            (j > i).then_some(j)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(s: &str) -> Option<Vec<(String, String)>> {
        let mut v = vec![];
        fields(s.as_bytes(), |k, x| {
            v.push((String::from_utf8_lossy(k).into(), String::from_utf8_lossy(x).into()))
        })?;
        Some(v)
    }

    #[test]
    fn walks_top_level_fields_and_skips_nested_values() {
        let got =
            all(r#"{"a":1,"b":"x\"}{[","c":{"d":[1,{"e":"]"}]},"f":true, "g" : null }"#).unwrap();
        let keys: Vec<_> = got.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["a", "b", "c", "f", "g"]);
        assert_eq!(got[1].1, r#""x\"}{[""#);
        assert_eq!(got[2].1, r#"{"d":[1,{"e":"]"}]}"#);
        assert_eq!(all("{}"), Some(vec![]));
    }

    #[test]
    fn refuses_what_is_not_a_well_formed_object() {
        for bad in [
            r#"{"a":1"#,
            r#"{"a":"unclosed}"#,
            r#"{"a":[1,2}"#,
            r#"{"a" 1}"#,
            r#"{"type":"user",xxxx}"#,
            "[1,2,3]",
            "not json",
            r#"{"a":1} trailing"#,
            r#"{"a":"ends in backslash\"#,
        ] {
            assert!(all(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn arrays_and_strings() {
        let mut v = vec![];
        elements(br#"[{"type":"text"}, "s", 3]"#, |e| v.push(e.to_vec())).unwrap();
        assert_eq!(v.len(), 3);
        assert_eq!(plain_str(br#""abc""#), Some("abc"));
        assert_eq!(plain_str(br#""a\nb""#), None);
    }
}
