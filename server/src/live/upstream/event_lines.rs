//! A watch's answer split into its events, one JSON document a line, without a
//! buffer of its own. kube's reader copies every event through an 8 KB buffer that
//! each watch keeps while open: at a thousand people with two watches each, 16 MB.
//! Here a line is taken straight from the frame it arrived in; only a line split
//! between frames is gathered, in a buffer given up as soon as the line is whole.

use std::pin::Pin;

use bytes::{Bytes, BytesMut};
use futures::Stream;
use http_body::Body;
use tower::BoxError;

/// The longest event read. A watch event carries one object, which etcd keeps under
/// 1.5 MB; a longer line is not from a working API server, and would otherwise be
/// gathered without bound.
pub const MAX_LINE: usize = 4 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum LinesError {
    #[error("a watch event longer than {MAX_LINE} bytes")]
    TooLong,
    #[error("reading the watch: {0}")]
    Read(BoxError),
}

/// `body`'s lines, without their newlines; empty lines are skipped.
pub fn event_lines<B>(body: B) -> impl Stream<Item = Result<Bytes, LinesError>> + Send
where
    B: Body<Data = Bytes> + Unpin + Send,
    B::Error: Into<BoxError>,
{
    let reader = Reader {
        body,
        frame: Bytes::new(),
        partial: BytesMut::new(),
        ended: false,
    };
    futures::stream::unfold(reader, |mut reader| async move {
        let line = reader.next_line().await?;
        Some((line, reader))
    })
}

struct Reader<B> {
    body: B,
    /// What is left of the last frame read.
    frame: Bytes,
    /// The start of a line that began in an earlier frame.
    partial: BytesMut,
    ended: bool,
}

impl<B> Reader<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    async fn next_line(&mut self) -> Option<Result<Bytes, LinesError>> {
        loop {
            if let Some(end) = self.frame.iter().position(|b| *b == b'\n') {
                let line = self.frame.split_to(end + 1).slice(..end);
                let line = if self.partial.is_empty() {
                    line
                } else {
                    self.partial.extend_from_slice(&line);
                    std::mem::take(&mut self.partial).freeze()
                };
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                return Some(Ok(line));
            }
            if !self.frame.is_empty() {
                if self.partial.len() + self.frame.len() > MAX_LINE {
                    self.ended = true;
                    self.partial = BytesMut::new();
                    self.frame = Bytes::new();
                    return Some(Err(LinesError::TooLong));
                }
                self.partial
                    .extend_from_slice(&std::mem::take(&mut self.frame));
            }
            if self.ended {
                return None;
            }
            let frame = std::future::poll_fn(|cx| Pin::new(&mut self.body).poll_frame(cx)).await;
            match frame {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        self.frame = data;
                    }
                }
                Some(Err(error)) => {
                    self.ended = true;
                    return Some(Err(LinesError::Read(error.into())));
                }
                None => {
                    self.ended = true;
                    // A last line without its newline.
                    let rest = std::mem::take(&mut self.partial).freeze();
                    if !rest.iter().all(u8::is_ascii_whitespace) {
                        return Some(Ok(rest));
                    }
                    return None;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use http_body::Frame;

    /// A body of the given frames.
    fn body(
        frames: &[&[u8]],
    ) -> http_body_util::StreamBody<impl Stream<Item = Result<Frame<Bytes>, BoxError>> + Unpin>
    {
        let frames: Vec<Result<Frame<Bytes>, BoxError>> = frames
            .iter()
            .map(|f| Ok(Frame::data(Bytes::copy_from_slice(f))))
            .collect();
        http_body_util::StreamBody::new(futures::stream::iter(frames))
    }

    async fn lines(frames: &[&[u8]]) -> Vec<String> {
        event_lines(body(frames))
            .map(|line| String::from_utf8(line.expect("line").to_vec()).expect("utf-8"))
            .collect()
            .await
    }

    #[tokio::test]
    async fn lines_are_found_within_and_across_frames() {
        assert_eq!(
            lines(&[
                b"{\"a\":1}\n{\"b\"",
                b":2}\n\n{\"c\":",
                b"3",
                b"}\r\n{\"d\":4}"
            ])
            .await,
            ["{\"a\":1}", "{\"b\":2}", "{\"c\":3}\r", "{\"d\":4}"]
        );
        assert!(lines(&[b"", b"\n", b" \n"]).await.is_empty());
    }

    #[tokio::test]
    async fn a_line_within_one_frame_is_not_copied() {
        let frame = Bytes::from_static(b"{\"a\":1}\n");
        let body = http_body_util::Full::new(frame.clone());
        let line = Box::pin(event_lines(body))
            .next()
            .await
            .expect("a line")
            .expect("read");
        assert_eq!(
            line.as_ptr(),
            frame.as_ptr(),
            "the line is the frame's own bytes"
        );
    }

    #[tokio::test]
    async fn a_line_past_the_bound_ends_the_stream() {
        let chunk = vec![b'x'; 1024 * 1024];
        let frames: Vec<&[u8]> = std::iter::repeat_n(chunk.as_slice(), 5).collect();
        let mut read = Box::pin(event_lines(body(&frames)));
        assert!(matches!(read.next().await, Some(Err(LinesError::TooLong))));
        assert!(read.next().await.is_none());
    }
}
