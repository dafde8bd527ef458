package mlscale.hadoop;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.FileInputStream;
import java.io.FileNotFoundException;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.URI;
import java.net.URL;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import javax.xml.parsers.DocumentBuilderFactory;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FSInputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.util.Progressable;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

/**
 * A Hadoop FileSystem for s3:// and s3a:// URIs that speaks S3's REST API (path-style, SigV4) to one endpoint.
 *
 * <p>PySpark ships Hadoop's client but not hadoop-aws (S3A) or the AWS SDK, so the emulator's Spark jobs reach
 * its S3 through this: GetObject with Range for reads (seekable, as Parquet needs), PutObject from a local file
 * on close for writes, ListObjectsV2 with a delimiter for directories, CopyObject + DeleteObject for renames.
 * A directory is a key prefix; mkdirs writes a zero-byte "dir/" marker (as S3A does) that is deleted once a
 * file is written beneath it. Settings: fs.mlscale.endpoint, fs.mlscale.region, fs.mlscale.access.key,
 * fs.mlscale.secret.key. https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-authenticating-requests.html
 */
public class S3FileSystem extends FileSystem {
  private static final long BLOCK_SIZE = 64L << 20;
  private URI uri;
  private String bucket;
  private String endpoint;
  private String region;
  private String accessKey;
  private String secretKey;
  private Path workingDir;

  @Override
  public String getScheme() {
    return "s3";
  }

  @Override
  public void initialize(URI name, Configuration conf) throws IOException {
    super.initialize(name, conf);
    setConf(conf);
    bucket = name.getAuthority();
    if (bucket == null || bucket.isEmpty()) {
      throw new IOException("an S3 URI names a bucket: " + name);
    }
    uri = URI.create(name.getScheme() + "://" + bucket);
    endpoint = conf.get("fs.mlscale.endpoint", "").replaceAll("/+$", "");
    if (endpoint.isEmpty()) {
      throw new IOException("fs.mlscale.endpoint is not set: the S3 endpoint this file system talks to");
    }
    region = conf.get("fs.mlscale.region", "us-east-1");
    accessKey = conf.get("fs.mlscale.access.key", "testing");
    secretKey = conf.get("fs.mlscale.secret.key", "testing");
    workingDir = new Path(uri.toString() + "/");
  }

  @Override
  public URI getUri() {
    return uri;
  }

  @Override
  public Path getWorkingDirectory() {
    return workingDir;
  }

  @Override
  public void setWorkingDirectory(Path dir) {
    workingDir = makeQualified(dir);
  }

  @Override
  public long getDefaultBlockSize() {
    return BLOCK_SIZE;
  }

  /** The object key of a path: no leading slash, and no trailing one. */
  private String key(Path path) {
    String raw = makeQualified(path).toUri().getPath();
    return raw.replaceAll("^/+", "").replaceAll("/+$", "");
  }

  private Path pathOf(String key) {
    return new Path(uri.toString() + "/" + key);
  }

  // ---- reading ----

  @Override
  public FSDataInputStream open(Path path, int bufferSize) throws IOException {
    FileStatus status = getFileStatus(path);
    if (status.isDirectory()) {
      throw new FileNotFoundException(path + " is a directory");
    }
    return new FSDataInputStream(new ObjectInputStream(key(path), status.getLen()));
  }

  /** Reads from a position with one ranged GET, reopened only when a seek moves it. */
  private class ObjectInputStream extends FSInputStream {
    private final String key;
    private final long length;
    private long pos;
    private InputStream body;
    private HttpURLConnection connection;

    ObjectInputStream(String key, long length) {
      this.key = key;
      this.length = length;
    }

    private void openAt() throws IOException {
      connection = request("GET", key, null, Map.of("Range", "bytes=" + pos + "-"));
      int code = connection.getResponseCode();
      if (code != 200 && code != 206) {
        throw failure(connection, "GET " + key);
      }
      body = connection.getInputStream();
    }

    private void drop() throws IOException {
      if (body != null) {
        body.close();
        body = null;
      }
    }

    @Override
    public void seek(long target) throws IOException {
      if (target < 0 || target > length) {
        throw new java.io.EOFException("cannot seek to " + target + " in " + length + " bytes");
      }
      if (target != pos) {
        drop();
        pos = target;
      }
    }

    @Override
    public long getPos() {
      return pos;
    }

    @Override
    public boolean seekToNewSource(long target) {
      return false;
    }

    @Override
    public int read() throws IOException {
      byte[] one = new byte[1];
      int n = read(one, 0, 1);
      return n < 0 ? -1 : one[0] & 0xff;
    }

    @Override
    public int read(byte[] buffer, int offset, int count) throws IOException {
      if (count == 0) {
        return 0;
      }
      if (pos >= length) {
        return -1;
      }
      if (body == null) {
        openAt();
      }
      int n = body.read(buffer, offset, count);
      if (n > 0) {
        pos += n;
      }
      return n;
    }

    @Override
    public int available() {
      return (int) Math.min(Integer.MAX_VALUE, length - pos);
    }

    @Override
    public void close() throws IOException {
      drop();
    }
  }

  // ---- writing ----

  @Override
  public FSDataOutputStream create(
      Path path,
      FsPermission permission,
      boolean overwrite,
      int bufferSize,
      short replication,
      long blockSize,
      Progressable progress)
      throws IOException {
    String key = key(path);
    if (!overwrite && exists(path)) {
      throw new org.apache.hadoop.fs.FileAlreadyExistsException(path + " exists");
    }
    File spool = File.createTempFile("mlscale-s3-", ".part");
    spool.deleteOnExit();
    OutputStream upload =
        new FileOutputStream(spool) {
          private boolean closed;

          @Override
          public void close() throws IOException {
            if (closed) {
              return;
            }
            closed = true;
            super.close();
            try {
              put(key, spool);
              deleteMarkersAbove(key);
            } finally {
              spool.delete();
            }
          }
        };
    return new FSDataOutputStream(upload, statistics);
  }

  @Override
  public FSDataOutputStream append(Path path, int bufferSize, Progressable progress) throws IOException {
    throw new UnsupportedOperationException("S3 objects cannot be appended to: " + path);
  }

  private void put(String key, File file) throws IOException {
    HttpURLConnection connection = request("PUT", key, null, Map.of());
    connection.setDoOutput(true);
    connection.setFixedLengthStreamingMode(file.length());
    try (OutputStream out = connection.getOutputStream();
        InputStream in = new FileInputStream(file)) {
      in.transferTo(out);
    }
    expect(connection, "PUT " + key, 200);
  }

  private void putEmpty(String key) throws IOException {
    HttpURLConnection connection = request("PUT", key, null, Map.of());
    connection.setDoOutput(true);
    connection.setFixedLengthStreamingMode(0);
    connection.getOutputStream().close();
    expect(connection, "PUT " + key, 200);
  }

  private void deleteMarkersAbove(String key) throws IOException {
    int slash = key.lastIndexOf('/');
    while (slash > 0) {
      deleteObject(key.substring(0, slash + 1));
      slash = key.lastIndexOf('/', slash - 1);
    }
  }

  @Override
  public boolean mkdirs(Path path, FsPermission permission) throws IOException {
    String key = key(path);
    if (key.isEmpty()) {
      return true;
    }
    FileStatus status = statusOrNull(path);
    if (status != null) {
      if (status.isFile()) {
        throw new org.apache.hadoop.fs.FileAlreadyExistsException(path + " is a file");
      }
      return true;
    }
    putEmpty(key + "/");
    return true;
  }

  // ---- listing and status ----

  private FileStatus statusOrNull(Path path) throws IOException {
    String key = key(path);
    Path qualified = makeQualified(path);
    if (key.isEmpty()) {
      return new FileStatus(0, true, 1, BLOCK_SIZE, 0, qualified);
    }
    HttpURLConnection head = request("HEAD", key, null, Map.of());
    int code = head.getResponseCode();
    if (code == 200) {
      long length = head.getContentLengthLong();
      return new FileStatus(length, false, 1, BLOCK_SIZE, head.getLastModified(), qualified);
    }
    head.disconnect();
    if (code != 404) {
      throw new IOException("HEAD " + key + ": HTTP " + code);
    }
    Listing listing = list(key + "/", null, 1, null);
    if (!listing.keys.isEmpty() || !listing.prefixes.isEmpty()) {
      return new FileStatus(0, true, 1, BLOCK_SIZE, 0, qualified);
    }
    return null;
  }

  @Override
  public FileStatus getFileStatus(Path path) throws IOException {
    FileStatus status = statusOrNull(path);
    if (status == null) {
      throw new FileNotFoundException("No such file or directory: " + makeQualified(path));
    }
    return status;
  }

  @Override
  public FileStatus[] listStatus(Path path) throws IOException {
    String key = key(path);
    String prefix = key.isEmpty() ? "" : key + "/";
    List<FileStatus> found = new ArrayList<>();
    String token = null;
    boolean any = false;
    do {
      Listing page = list(prefix, "/", 1000, token);
      for (int i = 0; i < page.keys.size(); i++) {
        any = true;
        String child = page.keys.get(i);
        if (child.equals(prefix)) {
          continue; // the directory's own marker
        }
        found.add(
            new FileStatus(
                page.sizes.get(i), false, 1, BLOCK_SIZE, page.modified.get(i), pathOf(child)));
      }
      for (String child : page.prefixes) {
        any = true;
        found.add(new FileStatus(0, true, 1, BLOCK_SIZE, 0, pathOf(child.replaceAll("/+$", ""))));
      }
      token = page.next;
    } while (token != null);
    if (!any) {
      FileStatus status = getFileStatus(path); // a file lists as itself; nothing at all is not found
      return status.isFile() ? new FileStatus[] {status} : new FileStatus[0];
    }
    return found.toArray(new FileStatus[0]);
  }

  /** Every key under a prefix, recursively. */
  private List<String> keysUnder(String prefix) throws IOException {
    List<String> keys = new ArrayList<>();
    String token = null;
    do {
      Listing page = list(prefix, null, 1000, token);
      keys.addAll(page.keys);
      token = page.next;
    } while (token != null);
    return keys;
  }

  // ---- rename and delete ----

  @Override
  public boolean rename(Path src, Path dst) throws IOException {
    FileStatus source = statusOrNull(src);
    if (source == null) {
      return false;
    }
    String from = key(src);
    String to = key(dst);
    FileStatus target = statusOrNull(dst);
    if (target != null && target.isDirectory()) {
      to = (to.isEmpty() ? "" : to + "/") + src.getName(); // into an existing directory, as HDFS does
    } else if (target != null) {
      return false;
    }
    if (source.isFile()) {
      copy(from, to);
      deleteObject(from);
    } else {
      for (String child : keysUnder(from + "/")) {
        String moved = to + "/" + child.substring(from.length() + 1);
        if (!child.endsWith("/")) {
          copy(child, moved);
        }
        deleteObject(child);
      }
    }
    deleteMarkersAbove(to);
    return true;
  }

  private void copy(String from, String to) throws IOException {
    String source = "/" + bucket + "/" + encodePath(from);
    HttpURLConnection connection = request("PUT", to, null, Map.of("x-amz-copy-source", source));
    connection.setDoOutput(true);
    connection.setFixedLengthStreamingMode(0);
    connection.getOutputStream().close();
    expect(connection, "CopyObject " + from + " -> " + to, 200);
  }

  @Override
  public boolean delete(Path path, boolean recursive) throws IOException {
    FileStatus status = statusOrNull(path);
    if (status == null) {
      return false;
    }
    String key = key(path);
    if (status.isFile()) {
      deleteObject(key);
      return true;
    }
    List<String> children = keysUnder(key.isEmpty() ? "" : key + "/");
    boolean onlyMarker = children.size() == 1 && children.get(0).equals(key + "/");
    if (!recursive && !children.isEmpty() && !onlyMarker) {
      throw new IOException(path + " is a directory that is not empty and recursive is false");
    }
    for (String child : children) {
      deleteObject(child);
    }
    return true;
  }

  private void deleteObject(String key) throws IOException {
    HttpURLConnection connection = request("DELETE", key, null, Map.of());
    int code = connection.getResponseCode();
    if (code != 204 && code != 200 && code != 404) {
      throw failure(connection, "DELETE " + key);
    }
    drain(connection);
  }

  // ---- S3's REST API ----

  private static class Listing {
    final List<String> keys = new ArrayList<>();
    final List<Long> sizes = new ArrayList<>();
    final List<Long> modified = new ArrayList<>();
    final List<String> prefixes = new ArrayList<>();
    String next;
  }

  private Listing list(String prefix, String delimiter, int maxKeys, String token) throws IOException {
    TreeMap<String, String> query = new TreeMap<>();
    query.put("list-type", "2");
    query.put("prefix", prefix);
    query.put("max-keys", Integer.toString(maxKeys));
    if (delimiter != null) {
      query.put("delimiter", delimiter);
    }
    if (token != null) {
      query.put("continuation-token", token);
    }
    HttpURLConnection connection = request("GET", "", query, Map.of());
    if (connection.getResponseCode() != 200) {
      throw failure(connection, "ListObjectsV2 " + prefix);
    }
    Listing listing = new Listing();
    try (InputStream body = connection.getInputStream()) {
      DocumentBuilderFactory factory = DocumentBuilderFactory.newInstance();
      factory.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
      Document doc = factory.newDocumentBuilder().parse(body);
      NodeList contents = doc.getElementsByTagName("Contents");
      for (int i = 0; i < contents.getLength(); i++) {
        Element item = (Element) contents.item(i);
        listing.keys.add(text(item, "Key"));
        listing.sizes.add(Long.parseLong(text(item, "Size")));
        String when = text(item, "LastModified");
        listing.modified.add(when == null ? 0L : Instant.parse(when).toEpochMilli());
      }
      NodeList common = doc.getElementsByTagName("CommonPrefixes");
      for (int i = 0; i < common.getLength(); i++) {
        listing.prefixes.add(text((Element) common.item(i), "Prefix"));
      }
      String truncated = text(doc.getDocumentElement(), "IsTruncated");
      if ("true".equals(truncated)) {
        listing.next = text(doc.getDocumentElement(), "NextContinuationToken");
      }
    } catch (javax.xml.parsers.ParserConfigurationException | org.xml.sax.SAXException e) {
      throw new IOException("ListObjectsV2 " + prefix + ": unreadable answer", e);
    }
    return listing;
  }

  private static String text(Element parent, String tag) {
    NodeList nodes = parent.getElementsByTagName(tag);
    return nodes.getLength() == 0 ? null : nodes.item(0).getTextContent();
  }

  private static String encode(String value) {
    return URLEncoder.encode(value, StandardCharsets.UTF_8).replace("+", "%20").replace("%7E", "~");
  }

  private static String encodePath(String key) {
    return encode(key).replace("%2F", "/");
  }

  /** A signed request (SigV4, unsigned payload) for a key of this bucket, path-style. */
  private HttpURLConnection request(
      String method, String key, TreeMap<String, String> query, Map<String, String> extra)
      throws IOException {
    String path = "/" + bucket + "/" + encodePath(key);
    StringBuilder canonicalQuery = new StringBuilder();
    if (query != null) {
      for (Map.Entry<String, String> entry : query.entrySet()) {
        if (canonicalQuery.length() > 0) {
          canonicalQuery.append('&');
        }
        canonicalQuery.append(encode(entry.getKey())).append('=').append(encode(entry.getValue()));
      }
    }
    URL url = new URL(endpoint + path + (canonicalQuery.length() > 0 ? "?" + canonicalQuery : ""));
    String now =
        DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss'Z'").withZone(ZoneOffset.UTC).format(Instant.now());
    String day = now.substring(0, 8);
    TreeMap<String, String> headers = new TreeMap<>();
    headers.put("host", url.getAuthority());
    headers.put("x-amz-content-sha256", "UNSIGNED-PAYLOAD");
    headers.put("x-amz-date", now);
    for (Map.Entry<String, String> entry : extra.entrySet()) {
      headers.put(entry.getKey().toLowerCase(), entry.getValue());
    }
    StringBuilder canonicalHeaders = new StringBuilder();
    for (Map.Entry<String, String> entry : headers.entrySet()) {
      canonicalHeaders.append(entry.getKey()).append(':').append(entry.getValue().trim()).append('\n');
    }
    String signedHeaders = String.join(";", headers.keySet());
    String canonical =
        String.join(
            "\n",
            method,
            path,
            canonicalQuery.toString(),
            canonicalHeaders.toString(),
            signedHeaders,
            "UNSIGNED-PAYLOAD");
    String scope = day + "/" + region + "/s3/aws4_request";
    String toSign = String.join("\n", "AWS4-HMAC-SHA256", now, scope, hex(sha256(canonical)));
    byte[] signingKey = hmac(("AWS4" + secretKey).getBytes(StandardCharsets.UTF_8), day);
    signingKey = hmac(hmac(hmac(signingKey, region), "s3"), "aws4_request");
    String signature = hex(hmac(signingKey, toSign));
    HttpURLConnection connection = (HttpURLConnection) url.openConnection();
    connection.setRequestMethod(method);
    connection.setConnectTimeout(10_000);
    connection.setReadTimeout(300_000);
    for (Map.Entry<String, String> entry : headers.entrySet()) {
      if (!entry.getKey().equals("host")) {
        connection.setRequestProperty(entry.getKey(), entry.getValue());
      }
    }
    connection.setRequestProperty(
        "Authorization",
        "AWS4-HMAC-SHA256 Credential="
            + accessKey
            + "/"
            + scope
            + ", SignedHeaders="
            + signedHeaders
            + ", Signature="
            + signature);
    return connection;
  }

  private static void drain(HttpURLConnection connection) throws IOException {
    InputStream body =
        connection.getResponseCode() >= 400 ? connection.getErrorStream() : connection.getInputStream();
    if (body != null) {
      body.transferTo(OutputStream.nullOutputStream());
      body.close();
    }
  }

  private static void expect(HttpURLConnection connection, String what, int code) throws IOException {
    if (connection.getResponseCode() != code) {
      throw failure(connection, what);
    }
    drain(connection);
  }

  /** The service's own error (its Code and Message), not only the HTTP status. */
  private static IOException failure(HttpURLConnection connection, String what) throws IOException {
    int code = connection.getResponseCode();
    ByteArrayOutputStream body = new ByteArrayOutputStream();
    InputStream error = connection.getErrorStream();
    if (error != null) {
      error.transferTo(body);
      error.close();
    }
    String text = body.toString(StandardCharsets.UTF_8);
    String message = what + ": HTTP " + code + " " + text.replaceAll("\\s+", " ").trim();
    return code == 404 ? new FileNotFoundException(message) : new IOException(message);
  }

  private static byte[] sha256(String text) throws IOException {
    try {
      return MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IOException(e);
    }
  }

  private static byte[] hmac(byte[] key, String data) throws IOException {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(key, "HmacSHA256"));
      return mac.doFinal(data.getBytes(StandardCharsets.UTF_8));
    } catch (java.security.GeneralSecurityException e) {
      throw new IOException(e);
    }
  }

  private static String hex(byte[] bytes) {
    StringBuilder out = new StringBuilder();
    for (byte b : bytes) {
      out.append(String.format("%02x", b));
    }
    return out.toString();
  }
}
