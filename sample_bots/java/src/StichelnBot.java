// The Java sample bot: the minimal bot of docs/bot-protocol.md (it always plays its
// lowest card) on Debian's grpc-java, with one stream per seat it is given
// (STICHELN_SEATS), so that one process plays several matches at once.
//
// A hosted bot reaches the referee only through a Unix socket (STICHELN_REFEREE =
// unix:/path): the channel dials it on the JDK's Unix-domain socket (UnixChannel.java);
// a host:port it dials as is.
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.StreamObserver;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.util.concurrent.DefaultThreadFactory;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;
import sticheln.v1.Bot.BotMessage;
import sticheln.v1.Bot.Decision;
import sticheln.v1.Bot.DecisionRequest;
import sticheln.v1.Bot.Hello;
import sticheln.v1.Bot.MatchEnd;
import sticheln.v1.Bot.MatchStart;
import sticheln.v1.Bot.RefereeMessage;
import sticheln.v1.RefereeGrpc;

public final class StichelnBot {
  static final String NAME = "java-minimal";
  static final DefaultThreadFactory daemon = new DefaultThreadFactory("referee", true);

  public static void main(String[] args) throws Exception {
    String referee = System.getenv().getOrDefault("STICHELN_REFEREE", "");
    if (referee.isEmpty()) {
      System.err.println(NAME + ": STICHELN_REFEREE is not set (host:port or unix:/path)");
      System.exit(2);
    }
    int seats = 1;
    String given = System.getenv("STICHELN_SEATS");
    if (given != null && !given.isEmpty()) {
      try {
        seats = Integer.parseInt(given);
      } catch (NumberFormatException e) {
        seats = 0;
      }
      if (seats < 1) {
        System.err.println(NAME + ": STICHELN_SEATS is not a positive number: " + given);
        System.exit(2);
      }
    }
    // Netty names each channel after the machine's hardware address, which a jailed bot
    // has none of (it would log a warning and use random bytes): a fixed name does.
    System.setProperty("io.netty.machineId", "02:00:00:00:00:01");
    ManagedChannel channel = dial(referee);
    RefereeGrpc.RefereeStub stub = RefereeGrpc.newStub(channel);
    List<Seat> all = new ArrayList<>();
    for (int i = 0; i < seats; i++) {
      Seat seat = new Seat();
      seat.out = stub.play(seat);
      seat.send(BotMessage.newBuilder().setHello(Hello.newBuilder()
          .setBotName(NAME).setBotVersion("1").setProtocolVersion(1)
          .setToken(System.getenv().getOrDefault("STICHELN_TOKEN", ""))).build());
      all.add(seat);
    }
    int status = 0;
    for (Seat seat : all) {
      seat.done.await();
      Throwable error = seat.error.get();
      if (error != null && status == 0) {
        Status s = Status.fromThrowable(error);
        System.err.println(NAME + ": " + s.getCode() + ": " + s.getDescription());
        status = 1;
      }
    }
    channel.shutdownNow();
    System.exit(status);
  }

  /** One stream: answers each request with the lowest card(s) of the hand. */
  static final class Seat implements StreamObserver<RefereeMessage> {
    StreamObserver<BotMessage> out;
    final CountDownLatch done = new CountDownLatch(1);
    final AtomicReference<Throwable> error = new AtomicReference<>();
    MatchStart start;

    synchronized void send(BotMessage message) {
      out.onNext(message);
    }

    @Override
    public void onNext(RefereeMessage message) {
      switch (message.getKindCase()) {
        case MATCH_START:
          start = message.getMatchStart();
          break;
        case REQUEST:
          DecisionRequest request = message.getRequest();
          send(BotMessage.newBuilder().setDecision(Decision.newBuilder()
              .setRequestId(request.getRequestId())
              .addAllCards(choose(request.getView().getHandList(), request.getCount()))).build());
          break;
        case MATCH_END:
          check(start, message.getMatchEnd());
          break;
        default:
          break;
      }
    }

    @Override
    public void onError(Throwable t) {
      error.set(t);
      done.countDown();
    }

    @Override
    public void onCompleted() { // status OK: no more matches
      synchronized (this) {
        out.onCompleted();
      }
      done.countDown();
    }
  }

  /** The lowest card (a card play, or the first pain card) and, when two are asked for, a
   * second pain card of another suit if the hand has one. */
  static List<Integer> choose(List<Integer> hand, int count) {
    List<Integer> sorted = new ArrayList<>(hand);
    Collections.sort(sorted);
    List<Integer> cards = new ArrayList<>(List.of(sorted.get(0)));
    if (count == 2) {
      int second = sorted.get(1);
      for (int c : sorted) {
        if (c >> 4 != sorted.get(0) >> 4) {
          second = c;
          break;
        }
      }
      cards.add(second);
    }
    return cards;
  }

  /** The revealed seed against the commitment of the match's start. */
  static void check(MatchStart start, MatchEnd end) {
    if (!end.getSeedWithheld().isEmpty()) {
      System.err.println(NAME + ": seed withheld: " + end.getSeedWithheld());
      return;
    }
    try {
      MessageDigest sha = MessageDigest.getInstance("SHA-256");
      sha.update("sticheln/seed/v1".getBytes(StandardCharsets.US_ASCII));
      sha.update(ByteBuffer.allocate(8).order(ByteOrder.BIG_ENDIAN).putLong(end.getSeed()).array());
      sha.update(end.getSeedNonce().toByteArray());
      if (start == null || !Arrays.equals(sha.digest(), start.getSeedCommitment().toByteArray())) {
        System.err.println(NAME + ": the seed does not match its commitment");
      }
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /** A channel to ``referee``: ``unix:/path`` on the JDK's Unix-domain socket, else
   * ``host:port`` over TCP. */
  static ManagedChannel dial(String referee) {
    NettyChannelBuilder builder;
    if (referee.startsWith("unix:")) {
      String path = referee.substring("unix:".length()).replaceFirst("^//", "");
      builder = NettyChannelBuilder.forAddress(UnixDomainSocketAddress.of(path))
          .channelFactory(UnixChannel::new)
          .eventLoopGroup(new NioEventLoopGroup(1, daemon))
          .overrideAuthority("localhost");
    } else {
      builder = NettyChannelBuilder.forTarget(referee);
    }
    // Each answer is computed where its request arrives (the channel's own thread): no
    // hand-over to another thread per decision, which a loaded machine makes costly.
    return builder.directExecutor().usePlaintext().build();
  }
}
