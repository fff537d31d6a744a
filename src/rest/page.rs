//! ORDS's paging: `limit`/`offset` parameters (default page size 25, at most 500) and the
//! envelope every listing answers with —
//! `{"items":[…],"hasMore":…,"limit":…,"offset":…,"count":…,"links":[{"rel":"self",…},…]}`,
//! where `count` is the number of items on this page, as in ORDS.
//!
//! Beyond ORDS, when the read's order allows a keyset (natural order, `_id`, an indexed
//! field), the `next` link also carries `after=<position>`: where this page ended. A request
//! with `after` resumes right there — the next page is a bounded index seek, however deep,
//! and documents inserted or deleted meanwhile do not shift it — while `offset` keeps
//! counting pages for the envelope. The position is `n<sequence>`, `k<hex _id key>` or
//! `i<hex index key>.<hex _id key>`; any value in it is compared, never trusted further.
//!
//! Not for: reading the documents (that is `operations`).

use axum::http::{header, HeaderMap, Uri};
use serde::Serialize;
use serde_json::Value;

use super::error::{RestError, RestResult};
use crate::store::ScanPosition;

/// ORDS's default page size.
pub const DEFAULT_PAGE_SIZE: u64 = 25;
/// The largest page a client may ask for.
pub const MAX_PAGE_SIZE: u64 = 500;

/// The page a request asks for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Paging {
    pub offset: u64,
    pub limit: u64,
}

impl Paging {
    /// From the `limit` and `offset` query parameters, `default_limit` when absent.
    pub fn from_params(
        limit: Option<&str>,
        offset: Option<&str>,
        default_limit: u64,
    ) -> RestResult<Paging> {
        let number = |text: Option<&str>, name: &str| -> RestResult<Option<u64>> {
            text.map(|t| {
                t.trim().parse::<u64>().map_err(|_| {
                    RestError::BadRequest(format!(
                        "{name} must be a non-negative integer, not {t:?}"
                    ))
                })
            })
            .transpose()
        };
        let limit = number(limit, "limit")?
            .unwrap_or(default_limit)
            .clamp(1, MAX_PAGE_SIZE);
        let offset = number(offset, "offset")?.unwrap_or(0);
        Ok(Paging { offset, limit })
    }
}

/// One link of an envelope.
#[derive(Debug, Serialize)]
pub struct Link {
    pub rel: &'static str,
    pub href: String,
}

/// A page in ORDS's envelope; items are JSON values, or documents written as relaxed
/// Extended JSON (`extjson::RelaxedDocument`).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Envelope<Item = Value> {
    pub items: Vec<Item>,
    pub has_more: bool,
    pub limit: u64,
    pub offset: u64,
    pub count: usize,
    pub links: Vec<Link>,
}

impl<Item: Serialize> Envelope<Item> {
    /// The envelope of `items`, with `self`, `prev` and `next` links built from the request;
    /// `next` resumes after `resume` when the page ended at a keyset position.
    pub fn new(
        items: Vec<Item>,
        has_more: bool,
        paging: Paging,
        resume: Option<&ScanPosition>,
        uri: &Uri,
        headers: &HeaderMap,
    ) -> Envelope<Item> {
        let base = request_base(uri, headers);
        let mut links = vec![Link {
            rel: "self",
            href: page_href(&base, uri, None, None),
        }];
        if paging.offset > 0 {
            let previous = Paging {
                offset: paging.offset.saturating_sub(paging.limit),
                limit: paging.limit,
            };
            links.push(Link {
                rel: "prev",
                href: page_href(&base, uri, Some(previous), None),
            });
        }
        if has_more {
            let next = Paging {
                offset: paging.offset.saturating_add(paging.limit),
                limit: paging.limit,
            };
            let after = resume.map(encode_resume);
            links.push(Link {
                rel: "next",
                href: page_href(&base, uri, Some(next), after.as_deref()),
            });
        }
        Envelope {
            count: items.len(),
            items,
            has_more,
            limit: paging.limit,
            offset: paging.offset,
            links,
        }
    }
}

/// The `after` parameter of a request: where its page resumes, if it says.
pub fn resume_of(uri: &Uri) -> RestResult<Option<ScanPosition>> {
    uri.query()
        .unwrap_or("")
        .split('&')
        .find_map(|part| part.strip_prefix("after="))
        .map(decode_resume)
        .transpose()
}

/// A position as the `after` parameter writes it.
pub fn encode_resume(position: &ScanPosition) -> String {
    match position {
        ScanPosition::Natural(sequence) => format!("n{sequence}"),
        ScanPosition::Key(key) => format!("k{}", hex(key)),
        ScanPosition::IndexEntry { index_key, key } => {
            format!("i{}.{}", hex(index_key), hex(key))
        }
    }
}

/// The position an `after` parameter names (400 when it is not one).
pub fn decode_resume(text: &str) -> RestResult<ScanPosition> {
    let bad = || RestError::BadRequest(format!("after: {text:?} is not a page position"));
    let (kind, rest) = text.split_at_checked(1).ok_or_else(bad)?;
    match kind {
        "n" => rest.parse().map(ScanPosition::Natural).map_err(|_| bad()),
        "k" => unhex(rest).map(ScanPosition::Key).ok_or_else(bad),
        "i" => {
            let (index_key, key) = rest.split_once('.').ok_or_else(bad)?;
            Ok(ScanPosition::IndexEntry {
                index_key: unhex(index_key).ok_or_else(bad)?,
                key: unhex(key).ok_or_else(bad)?,
            })
        }
        _ => Err(bad()),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if text.len() % 2 != 0 {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(text.get(at..at + 2)?, 16).ok())
        .collect()
}

/// `{"items":[{"id":…,"_id":…}],"hasMore":false,"count":…}`: what an insert answers, `id`
/// being the path segment that names each document.
pub fn inserted_items(ids: &[bson::Bson]) -> Value {
    let items: Vec<Value> = ids
        .iter()
        .map(|id| {
            serde_json::json!({
                "id": super::extjson::id_to_segment(id),
                "_id": id.clone().into_relaxed_extjson(),
            })
        })
        .collect();
    serde_json::json!({"items": items, "hasMore": false, "count": ids.len()})
}

/// `http://host` as the client addressed us (the `Host` header).
pub fn request_base(uri: &Uri, headers: &HeaderMap) -> String {
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| uri.authority().map(|a| a.as_str()))
        .unwrap_or("localhost");
    format!("http://{host}")
}

/// The request's URL, with `offset`/`limit` (and `after`) replaced when `paging` is given.
fn page_href(base: &str, uri: &Uri, paging: Option<Paging>, after: Option<&str>) -> String {
    let path = uri.path();
    let Some(paging) = paging else {
        return match uri.query() {
            Some(query) => format!("{base}{path}?{query}"),
            None => format!("{base}{path}"),
        };
    };
    let mut parts: Vec<String> = uri
        .query()
        .unwrap_or("")
        .split('&')
        .filter(|p| {
            !p.is_empty()
                && !p.starts_with("offset=")
                && !p.starts_with("limit=")
                && !p.starts_with("after=")
        })
        .map(str::to_string)
        .collect();
    parts.push(format!("offset={}", paging.offset));
    parts.push(format!("limit={}", paging.limit));
    if let Some(after) = after {
        parts.push(format!("after={after}"));
    }
    format!("{base}{path}?{}", parts.join("&"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paging_defaults_and_bounds() {
        assert_eq!(
            Paging::from_params(None, None, DEFAULT_PAGE_SIZE).unwrap(),
            Paging {
                offset: 0,
                limit: 25
            }
        );
        assert_eq!(
            Paging::from_params(Some("9999"), Some("3"), 25).unwrap(),
            Paging {
                offset: 3,
                limit: MAX_PAGE_SIZE
            }
        );
        assert!(Paging::from_params(Some("-1"), None, 25).is_err());
    }

    #[test]
    fn next_link_keeps_the_query_and_moves_the_offset() {
        let uri: Uri = "/ords/db/soda/latest/c?q=%7B%7D&limit=2".parse().unwrap();
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, "example:8080".parse().unwrap());
        let page: Envelope = Envelope::new(
            vec![],
            true,
            Paging {
                offset: 0,
                limit: 2,
            },
            None,
            &uri,
            &headers,
        );
        let next = page.links.iter().find(|l| l.rel == "next").unwrap();
        assert_eq!(
            next.href,
            "http://example:8080/ords/db/soda/latest/c?q=%7B%7D&offset=2&limit=2"
        );
    }

    #[test]
    fn a_keyset_next_link_carries_where_the_page_ended() {
        let uri: Uri = "/ords/db/soda/latest/c?after=n3&offset=2&limit=2"
            .parse()
            .unwrap();
        let position = ScanPosition::IndexEntry {
            index_key: vec![0x0a, 0xff],
            key: vec![0],
        };
        let paging = Paging {
            offset: 2,
            limit: 2,
        };
        let page: Envelope = Envelope::new(
            vec![],
            true,
            paging,
            Some(&position),
            &uri,
            &HeaderMap::new(),
        );
        let next = page.links.iter().find(|l| l.rel == "next").unwrap();
        assert!(
            next.href.ends_with("?offset=4&limit=2&after=i0aff.00"),
            "{}",
            next.href
        );
        let prev = page.links.iter().find(|l| l.rel == "prev").unwrap();
        assert!(prev.href.ends_with("?offset=0&limit=2"), "{}", prev.href);
        assert_eq!(resume_of(&uri).unwrap(), Some(ScanPosition::Natural(3)));
        for position in [
            ScanPosition::Natural(-7),
            ScanPosition::Key(vec![1, 2, 254]),
            position,
        ] {
            assert_eq!(decode_resume(&encode_resume(&position)).unwrap(), position);
        }
        for bad in ["", "x1", "n", "k0", "kzz", "i00", "nabc"] {
            assert!(decode_resume(bad).is_err(), "{bad}");
        }
    }
}
