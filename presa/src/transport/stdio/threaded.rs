//! stdin and stdout through threads of their own, for what is not a pipe (a socket, a
//! terminal, a file): a read of those waits until input comes, and a write until the
//! client reads, and neither can be cancelled.
//!
//! Each stream gets one plain thread, not the runtime's blocking pool, and nothing joins
//! it or waits for it: a read that only input would end, or a write that only the client
//! would end, holds neither the runtime's shutdown nor the process's exit. Once serving
//! ends, the threads end too at their next step (the reader after its read, dropping
//! what it read; the writer once what it was handed is written).
//!
//! The descriptors' flags are left alone: `O_NONBLOCK` belongs to the open file, which a
//! socket or a terminal shares with the parent process, so setting it would change the
//! parent's terminal too.

use std::io::{self, Read, Write};
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::mpsc;

/// The most read at once, and the most handed to the writer thread not yet written.
const CHUNK: usize = 64 * 1024;

/// What the reader thread hands over: bytes read (never empty) or the error that ended
/// it. The end of the input is the end of the channel.
type Chunk = io::Result<Vec<u8>>;

/// The process's stdin, read by a thread of its own.
pub(super) struct ThreadReader {
    chunks: mpsc::Receiver<Chunk>,
    /// The chunk being handed out, and how much of it is.
    chunk: Vec<u8>,
    at: usize,
}

/// Starts the thread that reads stdin into a [`ThreadReader`]. It reads at most two
/// chunks ahead of what is consumed (one handed over, one waiting to be), so input the
/// server does not read stays with the client (backpressure, as with reads on demand).
pub(super) fn stdin() -> io::Result<ThreadReader> {
    spawn_reader(io::stdin())
}

fn spawn_reader(mut input: impl Read + Send + 'static) -> io::Result<ThreadReader> {
    let (tx, chunks) = mpsc::channel::<Chunk>(1);
    std::thread::Builder::new()
        .name("presa-stdin".into())
        .spawn(move || {
            let mut buf = vec![0; CHUNK];
            loop {
                let read = match input.read(&mut buf) {
                    Ok(0) => return,
                    Ok(n) => Ok(buf[..n].to_vec()),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => Err(e),
                };
                let failed = read.is_err();
                // Fails once the reader is dropped: serving is over.
                if tx.blocking_send(read).is_err() || failed {
                    return;
                }
            }
        })?;
    Ok(ThreadReader {
        chunks,
        chunk: Vec::new(),
        at: 0,
    })
}

impl AsyncRead for ThreadReader {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.at == this.chunk.len() {
            match this.chunks.poll_recv(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Ok(chunk))) => {
                    this.chunk = chunk;
                    this.at = 0;
                }
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Err(e)),
                // The thread ended: the end of the input.
                Poll::Ready(None) => return Poll::Ready(Ok(())),
            }
        }
        let n = (this.chunk.len() - this.at).min(buf.remaining());
        buf.put_slice(&this.chunk[this.at..this.at + n]);
        this.at += n;
        Poll::Ready(Ok(()))
    }
}

/// The process's stdout, written by a thread of its own. A write hands the bytes over
/// (at most [`CHUNK`] waiting at once); a flush completes once the thread has written
/// and flushed everything handed over.
pub(super) struct ThreadWriter {
    shared: Arc<Shared>,
}

/// What the writer and its thread share.
struct Shared {
    state: Mutex<State>,
    /// Wakes the thread: bytes were handed over, or the writer is gone.
    more: Condvar,
}

#[derive(Default)]
struct State {
    /// Handed over, not yet taken by the thread.
    queued: Vec<u8>,
    /// The thread is writing what it took.
    busy: bool,
    /// Why the thread stopped writing (it wrote nothing after).
    failed: Option<io::Error>,
    /// The writer is gone or shut down: the thread ends once `queued` is written.
    closed: bool,
    /// The writer's task, waiting for room or for a flush.
    waker: Option<Waker>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Nothing panics while holding the lock; a poisoned state is still consistent.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Starts the thread that writes stdout for a [`ThreadWriter`].
pub(super) fn stdout() -> io::Result<ThreadWriter> {
    spawn_writer(io::stdout())
}

fn spawn_writer(mut output: impl Write + Send + 'static) -> io::Result<ThreadWriter> {
    let shared = Arc::new(Shared {
        state: Mutex::default(),
        more: Condvar::new(),
    });
    let theirs = Arc::clone(&shared);
    std::thread::Builder::new()
        .name("presa-stdout".into())
        .spawn(move || {
            let shared = theirs;
            let mut taken = Vec::new();
            loop {
                {
                    let mut state = shared.lock();
                    while state.queued.is_empty() {
                        if state.closed {
                            return;
                        }
                        state = shared
                            .more
                            .wait(state)
                            .unwrap_or_else(PoisonError::into_inner);
                    }
                    std::mem::swap(&mut state.queued, &mut taken);
                    state.busy = true;
                    // Room again for the writer.
                    if let Some(waker) = state.waker.take() {
                        waker.wake();
                    }
                }
                let written = output.write_all(&taken).and_then(|()| output.flush());
                taken.clear();
                let mut state = shared.lock();
                state.busy = false;
                if let Err(e) = written {
                    state.failed = Some(e);
                }
                let failed = state.failed.is_some();
                if let Some(waker) = state.waker.take() {
                    waker.wake();
                }
                if failed {
                    return;
                }
            }
        })?;
    Ok(ThreadWriter { shared })
}

/// The thread's error, again for each later call (`io::Error` is not `Clone`).
fn again(e: &io::Error) -> io::Error {
    io::Error::new(e.kind(), e.to_string())
}

impl AsyncWrite for ThreadWriter {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let mut state = self.shared.lock();
        if let Some(e) = &state.failed {
            return Poll::Ready(Err(again(e)));
        }
        let room = CHUNK.saturating_sub(state.queued.len());
        if room == 0 {
            state.waker = Some(cx.waker().clone());
            return Poll::Pending;
        }
        let n = buf.len().min(room);
        state.queued.extend_from_slice(&buf[..n]);
        drop(state);
        self.shared.more.notify_one();
        Poll::Ready(Ok(n))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut state = self.shared.lock();
        if let Some(e) = &state.failed {
            return Poll::Ready(Err(again(e)));
        }
        if state.queued.is_empty() && !state.busy {
            return Poll::Ready(Ok(()));
        }
        state.waker = Some(cx.waker().clone());
        Poll::Pending
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.poll_flush(cx)
    }
}

impl Drop for ThreadWriter {
    fn drop(&mut self) {
        self.shared.lock().closed = true;
        self.shared.more.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::{CHUNK, spawn_reader, spawn_writer};
    use futures_util::FutureExt;
    use std::io::{self, Read, Write};
    use std::sync::mpsc as std_mpsc;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A reader fed by the test, one `read` call per message; `None` ends the input, an
    /// `Err` fails the read.
    struct Fed(std_mpsc::Receiver<io::Result<Vec<u8>>>);

    impl Read for Fed {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            match self.0.recv() {
                Ok(Ok(bytes)) => {
                    buf[..bytes.len()].copy_from_slice(&bytes);
                    Ok(bytes.len())
                }
                Ok(Err(e)) => Err(e),
                Err(_) => Ok(0),
            }
        }
    }

    #[tokio::test]
    async fn the_reader_hands_over_what_was_read_then_the_end() {
        let (feed, fed) = std_mpsc::channel();
        let mut reader = spawn_reader(Fed(fed)).expect("a thread");
        feed.send(Ok(b"one\ntw".to_vec())).expect("fed");
        feed.send(Ok(b"o\n".to_vec())).expect("fed");
        drop(feed);
        let mut all = Vec::new();
        reader.read_to_end(&mut all).await.expect("reads");
        assert_eq!(all, b"one\ntwo\n");
    }

    #[tokio::test]
    async fn a_read_error_reaches_the_reader() {
        let (feed, fed) = std_mpsc::channel();
        let mut reader = spawn_reader(Fed(fed)).expect("a thread");
        feed.send(Err(io::Error::other("broken"))).expect("fed");
        let mut buf = [0; 8];
        let e = reader.read(&mut buf).await.expect_err("the error");
        assert_eq!(e.to_string(), "broken");
    }

    /// A read into a buffer smaller than the chunk takes the chunk in parts.
    #[tokio::test]
    async fn a_chunk_is_handed_out_in_parts() {
        let (feed, fed) = std_mpsc::channel();
        let mut reader = spawn_reader(Fed(fed)).expect("a thread");
        feed.send(Ok(b"abcdef".to_vec())).expect("fed");
        let mut buf = [0; 4];
        assert_eq!(reader.read(&mut buf).await.expect("reads"), 4);
        assert_eq!(&buf, b"abcd");
        assert_eq!(reader.read(&mut buf).await.expect("reads"), 2);
        assert_eq!(&buf[..2], b"ef");
    }

    /// A writer whose every write says it began, then waits until the test lets it go.
    struct Gated {
        began: std_mpsc::Sender<()>,
        go: std_mpsc::Receiver<()>,
        out: std_mpsc::Sender<Vec<u8>>,
    }

    impl Write for Gated {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let _ = self.began.send(());
            self.go
                .recv()
                .map_err(|_| io::Error::from(io::ErrorKind::BrokenPipe))?;
            let _ = self.out.send(buf.to_vec());
            Ok(buf.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// A gated writer thread: (its writer, "a write began", "let one write go", what was
    /// written).
    fn gated() -> (
        super::ThreadWriter,
        std_mpsc::Receiver<()>,
        std_mpsc::Sender<()>,
        std_mpsc::Receiver<Vec<u8>>,
    ) {
        let (began, begins) = std_mpsc::channel();
        let (go, gate) = std_mpsc::channel();
        let (out, written) = std_mpsc::channel();
        let writer = spawn_writer(Gated {
            began,
            go: gate,
            out,
        })
        .expect("a thread");
        (writer, begins, go, written)
    }

    /// A flush completes only once the thread has written everything handed over; a
    /// write waits for room once `CHUNK` bytes wait beside the one being written.
    #[tokio::test]
    async fn flush_waits_for_the_thread_and_writes_wait_for_room() {
        let (mut writer, begins, go, written) = gated();
        writer.write_all(b"first\n").await.expect("handed over");
        begins.recv().expect("the thread writes");
        assert!(
            writer.flush().now_or_never().is_none(),
            "the flush waits for the thread's write"
        );
        go.send(()).expect("let go");
        writer.flush().await.expect("flushed");
        assert_eq!(written.recv().expect("written"), b"first\n");

        let big = vec![b'x'; 2 * CHUNK + 1];
        let n = writer.write(&big).await.expect("handed over");
        assert_eq!(n, CHUNK, "at most CHUNK at once");
        begins.recv().expect("the thread writes it");
        let m = writer.write(&big[n..]).await.expect("handed over");
        assert_eq!(m, CHUNK, "room for CHUNK more beside the write");
        assert!(
            writer.write(&big[n + m..]).now_or_never().is_none(),
            "no room past that"
        );
        for _ in 0..3 {
            go.send(()).expect("let go");
        }
        writer.write_all(&big[n + m..]).await.expect("room again");
        writer.flush().await.expect("flushed");
        let all: Vec<u8> = written.try_iter().flatten().collect();
        assert_eq!(all, big);
    }

    /// The thread's write error fails the next write and flush.
    #[tokio::test]
    async fn a_write_error_reaches_the_writer() {
        let (mut writer, _begins, go, _written) = gated();
        drop(go);
        writer.write_all(b"lost\n").await.expect("handed over");
        let e = writer.flush().await.expect_err("the thread failed");
        assert_eq!(e.kind(), io::ErrorKind::BrokenPipe);
        let e = writer.write_all(b"more\n").await.expect_err("still failed");
        assert_eq!(e.kind(), io::ErrorKind::BrokenPipe);
    }
}
