// A Netty channel on the JDK's own Unix-domain socket (SocketChannel.open(UNIX), Java 16
// and later), so that Debian's grpc-java dials the referee's Unix socket directly: Netty
// 4.1.48's NioSocketChannel speaks TCP only, and Debian does not package its native
// transport (the epoll library that gives other builds of grpc-java `unix:` addresses).
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelConfig;
import io.netty.channel.ChannelException;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelOption;
import io.netty.channel.DefaultChannelConfig;
import io.netty.channel.FileRegion;
import io.netty.channel.RecvByteBufAllocator;
import io.netty.channel.nio.AbstractNioByteChannel;
import java.io.IOException;
import java.net.SocketAddress;
import java.net.StandardProtocolFamily;
import java.nio.channels.SelectionKey;
import java.nio.channels.SocketChannel;

final class UnixChannel extends AbstractNioByteChannel {
  private final ChannelConfig config =
      new DefaultChannelConfig(this) {
        @Override
        public <T> boolean setOption(ChannelOption<T> option, T value) {
          // grpc-java asks every channel for TCP's keep-alive: nothing to do on a Unix socket.
          return option == ChannelOption.SO_KEEPALIVE || super.setOption(option, value);
        }
      };

  UnixChannel() {
    super(null, open());
  }

  private static SocketChannel open() {
    try {
      return SocketChannel.open(StandardProtocolFamily.UNIX);
    } catch (IOException e) {
      throw new ChannelException("cannot open a Unix-domain socket", e);
    }
  }

  @Override
  protected SocketChannel javaChannel() {
    return (SocketChannel) super.javaChannel();
  }

  @Override
  public ChannelConfig config() {
    return config;
  }

  @Override
  public boolean isOpen() {
    return javaChannel().isOpen();
  }

  @Override
  public boolean isActive() {
    return javaChannel().isOpen() && javaChannel().isConnected();
  }

  @Override
  protected boolean doConnect(SocketAddress remote, SocketAddress local) throws Exception {
    boolean connected = javaChannel().connect(remote);
    if (!connected) {
      selectionKey().interestOps(SelectionKey.OP_CONNECT);
    }
    return connected;
  }

  @Override
  protected void doFinishConnect() throws Exception {
    if (!javaChannel().finishConnect()) {
      throw new Error("finishConnect() returned false");
    }
  }

  @Override
  @SuppressWarnings("deprecation") // Handle: what Netty 4.1's own channels read with
  protected int doReadBytes(ByteBuf buf) throws Exception {
    RecvByteBufAllocator.Handle handle = unsafe().recvBufAllocHandle();
    handle.attemptedBytesRead(buf.writableBytes());
    return buf.writeBytes(javaChannel(), handle.attemptedBytesRead());
  }

  @Override
  protected int doWriteBytes(ByteBuf buf) throws Exception {
    return buf.readBytes(javaChannel(), buf.readableBytes());
  }

  @Override
  protected long doWriteFileRegion(FileRegion region) throws Exception {
    return region.transferTo(javaChannel(), region.transferred());
  }

  @Override
  protected ChannelFuture shutdownInput() {
    try {
      javaChannel().shutdownInput();
      return newSucceededFuture();
    } catch (IOException e) {
      return newFailedFuture(e);
    }
  }

  @Override
  protected boolean isInputShutdown0() {
    return !isActive();
  }

  @Override
  protected SocketAddress localAddress0() {
    try {
      return javaChannel().getLocalAddress();
    } catch (IOException e) {
      return null;
    }
  }

  @Override
  protected SocketAddress remoteAddress0() {
    try {
      return javaChannel().getRemoteAddress();
    } catch (IOException e) {
      return null;
    }
  }

  @Override
  protected void doBind(SocketAddress local) throws Exception {
    javaChannel().bind(local);
  }

  @Override
  protected void doDisconnect() throws Exception {
    doClose();
  }

  @Override
  protected void doClose() throws Exception {
    super.doClose();
    javaChannel().close();
  }
}
