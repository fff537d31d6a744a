//! `oracle://user:password@host:port/service` URLs: the logon (user and password,
//! percent-decoded) and the Easy Connect string `//host:port/service` the `oracle` crate
//! connects with. The password is never shown (see `settings::redact_password`).
//!
//! Not for: opening the pool (`mod.rs`).

/// A parsed `oracle://` URL.
#[derive(Clone, PartialEq, Eq)]
pub struct OracleUrl {
    pub user: String,
    pub password: String,
    /// Easy Connect: `//host[:port][/service]`.
    pub connect_string: String,
}

impl std::fmt::Debug for OracleUrl {
    /// Never shows the password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "oracle://{}:***@{}",
            self.user,
            &self.connect_string[2..]
        )
    }
}

impl OracleUrl {
    /// Parses `oracle://user:password@host[:port][/service]`; the error never repeats the
    /// password.
    pub fn parse(url: &str) -> Result<OracleUrl, String> {
        let rest = url
            .strip_prefix("oracle://")
            .ok_or_else(|| "an Oracle URL starts with oracle://".to_string())?;
        let (userinfo, address) = rest
            .rsplit_once('@')
            .ok_or_else(|| "an Oracle URL needs user:password@ before the host".to_string())?;
        let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
        let user = percent_decode(user).ok_or("the user name is not valid percent-encoding")?;
        let password =
            percent_decode(password).ok_or("the password is not valid percent-encoding")?;
        if user.is_empty() {
            return Err("an Oracle URL needs a user name".into());
        }
        if address.is_empty() || address.starts_with('/') || address.starts_with(':') {
            return Err(
                "an Oracle URL needs a host: oracle://user:password@host:port/service".into(),
            );
        }
        Ok(OracleUrl {
            user,
            password,
            connect_string: format!("//{address}"),
        })
    }
}

/// `%XX` escapes decoded (UTF-8); `None` for a malformed escape or invalid UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_give_a_logon_and_an_easy_connect_string() {
        let url = OracleUrl::parse("oracle://app:p%40ss:w@db.example:1521/FREEPDB1").unwrap();
        assert_eq!(url.user, "app");
        assert_eq!(url.password, "p@ss:w");
        assert_eq!(url.connect_string, "//db.example:1521/FREEPDB1");
        assert_eq!(
            format!("{url:?}"),
            "oracle://app:***@db.example:1521/FREEPDB1"
        );
    }

    #[test]
    fn bad_urls_are_refused_without_their_password() {
        for bad in [
            "postgres://a:b@h/db",
            "oracle://h:1521/x",
            "oracle://:secret@h/x",
            "oracle://u:secret@",
            "oracle://u:secret@/x",
            "oracle://u:sec%zzret@h/x",
        ] {
            let error = OracleUrl::parse(bad).unwrap_err();
            assert!(!error.contains("secret"), "{bad}: {error}");
        }
    }
}
