//! GraphQL introspection over POST (docs/design.md "Fetching": full fetch every time, no
//! validators). The same bounds as every fetch: total deadline, decoded body cap, redirects,
//! headers only to the configured origin. Any other source is read as a document (SDL or a saved
//! introspection result).

use super::{http, FetchError, FetchOutcome, FetchRequest, Source, Validators};

/// The standard introspection query (graphql-js `getIntrospectionQuery()` with its defaults:
/// descriptions on; no `specifiedByURL`, `isRepeatable`, schema description or deprecated
/// input values, so servers of any age answer it).
pub const INTROSPECTION_QUERY: &str = "query IntrospectionQuery {
  __schema {
    queryType { name }
    mutationType { name }
    subscriptionType { name }
    types { ...FullType }
    directives { name description locations args { ...InputValue } }
  }
}
fragment FullType on __Type {
  kind name description
  fields(includeDeprecated: true) {
    name description
    args { ...InputValue }
    type { ...TypeRef }
    isDeprecated deprecationReason
  }
  inputFields { ...InputValue }
  interfaces { ...TypeRef }
  enumValues(includeDeprecated: true) { name description isDeprecated deprecationReason }
  possibleTypes { ...TypeRef }
}
fragment InputValue on __InputValue { name description type { ...TypeRef } defaultValue }
fragment TypeRef on __Type {
  kind name
  ofType { kind name ofType { kind name ofType { kind name ofType { kind name
    ofType { kind name ofType { kind name ofType { kind name ofType { kind name } } } } } } } }
}
";

/// The JSON body POSTed to a GraphQL endpoint.
pub fn introspection_request_body() -> Vec<u8> {
    serde_json::json!({
        "query": INTROSPECTION_QUERY,
        "operationName": "IntrospectionQuery",
        "variables": {},
    })
    .to_string()
    .into_bytes()
}

/// Fetches a GraphQL schema: POSTs the introspection query to a URL, or reads a file. Stored
/// validators are never sent and none are returned.
pub async fn fetch_schema(request: &FetchRequest) -> Result<FetchOutcome, FetchError> {
    let mut request = request.clone();
    request.validators = None;
    let work = async {
        match &request.source {
            Source::Url(url) => {
                let post = http::PostBody {
                    content_type: "application/json",
                    accept: "application/graphql-response+json, application/json;q=0.9",
                    body: introspection_request_body(),
                };
                http::fetch_url_with(&request, url, Some(&post)).await
            }
            Source::Path(_) | Source::Stdin | Source::Git(_) => super::fetch(&request).await,
        }
    };
    let fetched = match tokio::time::timeout(request.timeout, work).await {
        Ok(result) => result?,
        Err(_elapsed) => return Err(FetchError::Timeout),
    };
    Ok(match fetched {
        FetchOutcome::Body {
            bytes, final_url, ..
        } => FetchOutcome::Body {
            bytes,
            validators: Validators::default(),
            final_url,
        },
        // Not reachable without validators; kept as the error it would be.
        FetchOutcome::NotModified => return Err(FetchError::UnexpectedNotModified),
    })
}
