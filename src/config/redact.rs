//! Takes passwords out of the command line before anything reports it: `getCmdLineOpts`
//! answers `argv` to any `clusterMonitor` user, and a connection string given to `--backend`
//! (`postgres://app:secret@db/...`, a libpq `password=secret` string, or a `?password=`
//! parameter) would otherwise hand that user the database's password. MongoDB does the same
//! for its own password flags: the value reads `<password>`.
//!
//! Used by `resolve` when it stores `argv` in the settings; not for log lines (the store
//! describes itself without a password).

/// What a password reads after redaction.
pub const REDACTED: &str = "<password>";

/// One command-line argument with every password it carries replaced by [`REDACTED`].
pub fn redact_argument(argument: &str) -> String {
    let without_userinfo = redact_url_userinfo(argument);
    redact_password_pairs(&without_userinfo)
}

/// `scheme://user:secret@host` → `scheme://user:<password>@host` (each URL in the argument;
/// a host list `a:1,b:2` after the `@` is untouched).
fn redact_url_userinfo(argument: &str) -> String {
    let mut out = String::with_capacity(argument.len());
    let mut rest = argument;
    while let Some(scheme_end) = rest.find("://") {
        let authority_start = scheme_end + 3;
        out.push_str(&rest[..authority_start]);
        rest = &rest[authority_start..];
        let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let authority = &rest[..authority_end];
        match authority.rfind('@') {
            Some(at) => {
                let userinfo = &authority[..at];
                match userinfo.find(':') {
                    Some(colon) => {
                        out.push_str(&userinfo[..=colon]);
                        out.push_str(REDACTED);
                    }
                    None => out.push_str(userinfo),
                }
                out.push_str(&authority[at..]);
            }
            None => out.push_str(authority),
        }
        rest = &rest[authority_end..];
    }
    out.push_str(rest);
    out
}

/// `password=secret` as a libpq key/value pair (ended by whitespace) or a URL query
/// parameter (ended by `&` or `#`), any case of `password`; a quoted libpq value
/// (`password='a b'`) is redacted up to its closing quote.
fn redact_password_pairs(argument: &str) -> String {
    const KEY: &str = "password=";
    let lower = argument.to_ascii_lowercase();
    let mut out = String::with_capacity(argument.len());
    let mut copied_to = 0;
    let mut search_from = 0;
    while let Some(found) = lower[search_from..].find(KEY) {
        let key_start = search_from + found;
        let starts_a_key = key_start == 0
            || matches!(
                argument.as_bytes()[key_start - 1],
                b' ' | b'\t' | b'?' | b'&' | b'=' | b'-'
            );
        let value_start = key_start + KEY.len();
        if !starts_a_key {
            search_from = value_start;
            continue;
        }
        let value = &argument[value_start..];
        let value_len = if let Some(quoted) = value.strip_prefix('\'') {
            quoted.find('\'').map_or(value.len(), |end| end + 2)
        } else {
            value
                .find(|c: char| c.is_whitespace() || c == '&' || c == '#')
                .unwrap_or(value.len())
        };
        out.push_str(&argument[copied_to..value_start]);
        out.push_str(REDACTED);
        copied_to = value_start + value_len;
        search_from = copied_to;
    }
    out.push_str(&argument[copied_to..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_password_is_redacted_and_the_rest_kept() {
        assert_eq!(
            redact_argument("postgres://app:s3cr%40t@db.example:5432/docs?sslmode=require"),
            "postgres://app:<password>@db.example:5432/docs?sslmode=require"
        );
        assert_eq!(
            redact_argument("--backend=postgresql://app:pw@h1:1,h2:2/db"),
            "--backend=postgresql://app:<password>@h1:1,h2:2/db"
        );
    }

    #[test]
    fn a_password_containing_at_signs_is_redacted_whole() {
        assert_eq!(
            redact_argument("postgres://app:a@b@host/db"),
            "postgres://app:<password>@host/db"
        );
    }

    #[test]
    fn urls_without_a_password_are_unchanged() {
        for unchanged in [
            "postgres://app@host/db",
            "sqlite:///var/lib/docgate/data.db",
            "postgres://host/db?user=app",
            "--listen",
            "127.0.0.1:27017",
            "--tls-key=/etc/docgate/key.pem",
        ] {
            assert_eq!(redact_argument(unchanged), unchanged);
        }
    }

    #[test]
    fn password_pairs_in_libpq_strings_and_query_parameters_are_redacted() {
        assert_eq!(
            redact_argument("host=db user=app password=pw dbname=docs"),
            "host=db user=app password=<password> dbname=docs"
        );
        assert_eq!(
            redact_argument("host=db PASSWORD='a b c' dbname=docs"),
            "host=db PASSWORD=<password> dbname=docs"
        );
        assert_eq!(
            redact_argument("postgres://host/db?user=app&password=pw&sslmode=disable"),
            "postgres://host/db?user=app&password=<password>&sslmode=disable"
        );
    }

    #[test]
    fn a_key_that_only_ends_in_password_is_not_a_password_pair() {
        assert_eq!(
            redact_argument("host=db oldpassword=x"),
            "host=db oldpassword=x"
        );
    }
}
