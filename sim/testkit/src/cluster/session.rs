//! A minimal RESP2 connection to one node: what the cluster's formation
//! and readiness checks send, without the client library.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::time::Duration;

use super::ClusterError;

/// A RESP2 reply, parsed (what the cluster commands answer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// `+OK`
    Status(String),
    /// `-ERR …`
    Error(String),
    /// `:1`
    Integer(i64),
    /// `$…` (`None` is the nil bulk string); bytes that are not UTF-8 are
    /// replaced.
    Bulk(Option<String>),
    /// `*…` (`None` is the nil array).
    Array(Option<Vec<Reply>>),
}

/// One connection to one node.
pub(super) struct Session {
    port: u16,
    reader: BufReader<TcpStream>,
}

impl Session {
    pub(super) fn open(port: u16) -> Result<Session, ClusterError> {
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let stream = TcpStream::connect_timeout(&addr, Duration::from_millis(500))?;
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        Ok(Session { port, reader: BufReader::new(stream) })
    }

    pub(super) fn call(&mut self, args: &[&str]) -> Result<Reply, ClusterError> {
        let mut request = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            request.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            request.extend_from_slice(a.as_bytes());
            request.extend_from_slice(b"\r\n");
        }
        self.reader.get_mut().write_all(&request)?;
        self.read()
    }

    fn read(&mut self) -> Result<Reply, ClusterError> {
        let mut line = String::new();
        if self.reader.read_line(&mut line)? == 0 {
            return Err(self.malformed("the connection closed"));
        }
        let line = line.trim_end_matches(['\r', '\n']);
        let (kind, rest) = line.split_at_checked(1).ok_or_else(|| self.malformed("an empty line"))?;
        let number = || rest.parse::<i64>().map_err(|_| self.malformed(line));
        Ok(match kind {
            "+" => Reply::Status(rest.to_string()),
            "-" => Reply::Error(rest.to_string()),
            ":" => Reply::Integer(number()?),
            "$" => match usize::try_from(number()?) {
                Err(_) => Reply::Bulk(None),
                Ok(len) => {
                    let mut body = vec![0u8; len + 2];
                    self.reader.read_exact(&mut body)?;
                    body.truncate(len);
                    Reply::Bulk(Some(String::from_utf8_lossy(&body).into_owned()))
                }
            },
            "*" => match usize::try_from(number()?) {
                Err(_) => Reply::Array(None),
                Ok(len) => Reply::Array(Some((0..len).map(|_| self.read()).collect::<Result<_, _>>()?)),
            },
            _ => return Err(self.malformed(line)),
        })
    }

    fn malformed(&self, what: &str) -> ClusterError {
        ClusterError::Command { port: self.port, command: "(reading a reply)".into(), reply: what.to_string() }
    }
}
