//! ORDS's paging: `limit`/`offset` parameters (default page size 25, at most 500) and the
//! envelope every listing answers with —
//! `{"items":[…],"hasMore":…,"limit":…,"offset":…,"count":…,"links":[{"rel":"self",…},…]}`,
//! where `count` is the number of items on this page, as in ORDS.
//!
//! Not for: reading the documents (that is `operations`).

use axum::http::{header, HeaderMap, Uri};
use serde::Serialize;
use serde_json::Value;

use super::error::{RestError, RestResult};

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
    /// The envelope of `items`, with `self`, `prev` and `next` links built from the request.
    pub fn new(
        items: Vec<Item>,
        has_more: bool,
        paging: Paging,
        uri: &Uri,
        headers: &HeaderMap,
    ) -> Envelope<Item> {
        let base = request_base(uri, headers);
        let mut links = vec![Link {
            rel: "self",
            href: page_href(&base, uri, None),
        }];
        if paging.offset > 0 {
            let previous = Paging {
                offset: paging.offset.saturating_sub(paging.limit),
                limit: paging.limit,
            };
            links.push(Link {
                rel: "prev",
                href: page_href(&base, uri, Some(previous)),
            });
        }
        if has_more {
            let next = Paging {
                offset: paging.offset.saturating_add(paging.limit),
                limit: paging.limit,
            };
            links.push(Link {
                rel: "next",
                href: page_href(&base, uri, Some(next)),
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

/// The request's URL, with `offset`/`limit` replaced when `paging` is given.
fn page_href(base: &str, uri: &Uri, paging: Option<Paging>) -> String {
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
        .filter(|p| !p.is_empty() && !p.starts_with("offset=") && !p.starts_with("limit="))
        .map(str::to_string)
        .collect();
    parts.push(format!("offset={}", paging.offset));
    parts.push(format!("limit={}", paging.limit));
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
            &uri,
            &headers,
        );
        let next = page.links.iter().find(|l| l.rel == "next").unwrap();
        assert_eq!(
            next.href,
            "http://example:8080/ords/db/soda/latest/c?q=%7B%7D&offset=2&limit=2"
        );
    }
}
