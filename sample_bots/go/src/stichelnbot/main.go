// The Go sample bot: the minimal bot of docs/bot-protocol.md (it always plays its lowest
// card) on Debian's gRPC packages, with one stream per seat it is given
// (STICHELN_SEATS), so that one process plays several matches at once.
//
// Build: sh build.sh (protoc writes the stubs into src/stichelnbot/sticheln/v1, then go
// build, offline, with /usr/share/gocode as the second half of GOPATH).
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	pb "stichelnbot/sticheln/v1"
)

const name = "go-minimal"

func main() {
	referee := os.Getenv("STICHELN_REFEREE")
	if referee == "" {
		fmt.Fprintln(os.Stderr, name+": STICHELN_REFEREE is not set (host:port or unix:/path)")
		os.Exit(2)
	}
	seats := 1
	if s := os.Getenv("STICHELN_SEATS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			fmt.Fprintln(os.Stderr, name+": STICHELN_SEATS is not a positive number:", s)
			os.Exit(2)
		}
		seats = n
	}
	conn, err := grpc.Dial(referee, grpc.WithInsecure())
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
	defer conn.Close()
	client := pb.NewRefereeClient(conn)
	// Each stream plays one match at a time; the bot ends when every stream has ended.
	failed := make(chan error, seats)
	var wg sync.WaitGroup
	for i := 0; i < seats; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := play(client); err != nil {
				failed <- err
			}
		}()
	}
	wg.Wait()
	close(failed)
	if err, ok := <-failed; ok {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
}

// play runs one stream until the referee ends it: nil for status OK (no more matches).
func play(client pb.RefereeClient) error {
	stream, err := client.Play(context.Background())
	if err != nil {
		return err
	}
	hello := &pb.Hello{BotName: name, BotVersion: "1", ProtocolVersion: 1, Token: os.Getenv("STICHELN_TOKEN")}
	if err := send(stream, &pb.BotMessage{Kind: &pb.BotMessage_Hello{Hello: hello}}); err != nil {
		return err
	}
	var start *pb.MatchStart
	for {
		msg, err := stream.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil { // refused, or the referee went away: the status says why
			s := status.Convert(err)
			return fmt.Errorf("%s: %s", s.Code(), s.Message())
		}
		switch kind := msg.Kind.(type) {
		case *pb.RefereeMessage_MatchStart:
			start = kind.MatchStart
		case *pb.RefereeMessage_Request:
			req := kind.Request
			decision := &pb.Decision{RequestId: req.RequestId, Cards: choose(req.View.Hand, req.Count)}
			if err := send(stream, &pb.BotMessage{Kind: &pb.BotMessage_Decision{Decision: decision}}); err != nil {
				return err
			}
		case *pb.RefereeMessage_MatchEnd:
			check(start, kind.MatchEnd)
		}
	}
}

// choose is the lowest card of the hand (a card play, or the first pain card) and, when
// two are asked for, a second pain card of another suit if the hand has one.
func choose(hand []uint32, count uint32) []uint32 {
	sorted := append([]uint32(nil), hand...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	cards := []uint32{sorted[0]}
	if count == 2 {
		second := sorted[1]
		for _, c := range sorted {
			if c>>4 != sorted[0]>>4 {
				second = c
				break
			}
		}
		cards = append(cards, second)
	}
	return cards
}

// check verifies the revealed seed against the commitment of the match's start.
func check(start *pb.MatchStart, end *pb.MatchEnd) {
	if end.SeedWithheld != "" { // a later match plays this deal: nothing to check yet
		fmt.Fprintln(os.Stderr, name+": seed withheld:", end.SeedWithheld)
		return
	}
	seed := make([]byte, 8)
	binary.BigEndian.PutUint64(seed, end.Seed)
	digest := sha256.Sum256(append(append([]byte("sticheln/seed/v1"), seed...), end.SeedNonce...))
	if start == nil || !bytes.Equal(digest[:], start.SeedCommitment) {
		fmt.Fprintln(os.Stderr, name+": the seed does not match its commitment")
	}
}

// send writes one message. io.EOF says only that the referee closed the stream: the
// reason is the status the next Recv returns.
func send(stream pb.Referee_PlayClient, msg *pb.BotMessage) error {
	if err := stream.Send(msg); err != nil && err != io.EOF {
		return err
	}
	return nil
}
