//! The server functions' answers as JSON, read in the browser as text.
//!
//! server_fn's own `Json` reads an answer with `serde_json::from_slice`, while a
//! resource's data carried in the page (hydration) is read with `serde_json::from_str`.
//! Both are generic over how the bytes are read, so every type the UI fetches had its
//! whole deserializer compiled twice into the wasm. Answers read as text share the one
//! copy hydration needs. The bytes on the wire are server_fn's JSON, unchanged.

use leptos::server_fn::codec::Post;
use leptos::server_fn::{Bytes, ContentType, Decodes, Encodes, Format, FormatType};
use serde::Serialize;
use serde::de::{DeserializeOwned, Error as _};

/// JSON, decoded from text (see the module's note).
pub struct JsonTextEncoding;

/// A server function's output as [`JsonTextEncoding`], sent by POST.
pub type JsonText = Post<JsonTextEncoding>;

impl ContentType for JsonTextEncoding {
    const CONTENT_TYPE: &'static str = "application/json";
}

impl FormatType for JsonTextEncoding {
    const FORMAT_TYPE: Format = Format::Text;
}

impl<T: Serialize> Encodes<T> for JsonTextEncoding {
    type Error = serde_json::Error;

    fn encode(output: &T) -> Result<Bytes, Self::Error> {
        serde_json::to_vec(output).map(Bytes::from)
    }
}

impl<T: DeserializeOwned> Decodes<T> for JsonTextEncoding {
    type Error = serde_json::Error;

    fn decode(bytes: Bytes) -> Result<T, Self::Error> {
        let text = std::str::from_utf8(&bytes).map_err(serde_json::Error::custom)?;
        serde_json::from_str(text)
    }
}
