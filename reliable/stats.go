package reliable

import "math"

// Stats are an endpoint's estimates, as the C library computes them. Times
// are in milliseconds, loss in percent, bandwidth in kilobits per second
// (with Config.PacketHeaderSize added to every packet).
type Stats struct {
	// RTT is smoothed on every ack (RTTSmoothingFactor): a sample is the
	// time from a send to the receive of the first packet acking it, so it
	// includes the far end's wait for its next packet and the tick length.
	RTT float32
	// RTTMin, RTTMax and RTTAvg are over the last RTTHistorySize samples.
	RTTMin, RTTMax, RTTAvg float32
	// JitterAvgVsMinRTT and JitterMaxVsMinRTT are the mean and largest
	// sample above RTTMin; JitterStddevVsAvgRTT is the samples' standard
	// deviation.
	JitterAvgVsMinRTT, JitterMaxVsMinRTT, JitterStddevVsAvgRTT float32
	// PacketLoss is the smoothed share of unacked packets among the older
	// half of the sent window (so it stays 0 until more than
	// SentPacketsBufferSize/2 packets were sent).
	PacketLoss float32
	// SentKbps, ReceivedKbps and AckedKbps are smoothed over the older half
	// of the sent and received windows.
	SentKbps, ReceivedKbps, AckedKbps float32
}

// Stats returns the estimates as of the last Update (RTT: the last ack).
func (e *Endpoint) Stats() Stats {
	e.commit()
	if e.rttStatsStale {
		e.rttStatsStale = false
		e.updateRTT(e.rttSnapshot)
	}
	return e.stats
}

// addRTTSample records the RTT of sent packet seq, sent at sentTime, which
// was just acked. Every float32 operation is rounded as the C library's
// (the explicit conversions also keep the compiler from fusing them).
func (e *Endpoint) addRTTSample(seq uint16, sentTime float64) {
	rtt := float32(float32(e.now-sentTime) * 1000)
	e.rttHistory[int(seq)%len(e.rttHistory)] = rtt
	e.rttHistoryChanged = true
	s := &e.stats
	if (s.RTT == 0 && rtt > 0) || math.Abs(float64(s.RTT-rtt)) < 0.00001 {
		s.RTT = rtt
	} else {
		s.RTT += float32((rtt - s.RTT) * e.cfg.RTTSmoothingFactor)
	}
}

// UpdateSeconds is Update with the time in seconds as a float64, the C
// library's unit: the vectors drive it with their exact times.
func (e *Endpoint) UpdateSeconds(now float64) {
	e.commit()
	e.now = now
	if e.rttHistoryChanged {
		// The RTT figures depend on the history alone: keep it as it is
		// now and compute them when Stats asks (two passes over 512
		// samples would be most of an Update's cost).
		e.rttHistoryChanged = false
		copy(e.rttSnapshot, e.rttHistory)
		e.rttStatsStale = true
	}
	e.updateSent()
	e.updateReceived()
}

// updateRTT computes min, max, average and jitter over an RTT history.
func (e *Endpoint) updateRTT(history []float32) {
	s := &e.stats
	minRTT, maxRTT, sum := float32(10000), float32(0), float32(0)
	count := 0
	for _, r := range history {
		if r < 0 {
			continue
		}
		if r < minRTT {
			minRTT = r
		}
		if r > maxRTT {
			maxRTT = r
		}
		sum = float32(sum + r)
		count++
	}
	if minRTT == 10000 {
		minRTT = 0
	}
	s.RTTMin, s.RTTMax, s.RTTAvg = minRTT, maxRTT, 0
	s.JitterAvgVsMinRTT, s.JitterMaxVsMinRTT, s.JitterStddevVsAvgRTT = 0, 0, 0
	if count == 0 {
		return
	}
	s.RTTAvg = float32(sum / float32(count))

	var jitterSum, jitterMax, devSum float32
	for _, r := range history {
		if r < 0 {
			continue
		}
		d := float32(r - s.RTTMin)
		jitterSum = float32(jitterSum + d)
		if d > jitterMax {
			jitterMax = d
		}
		dev := float32(r - s.RTTAvg)
		devSum = float32(devSum + float32(dev*dev))
	}
	s.JitterAvgVsMinRTT = float32(jitterSum / float32(count))
	s.JitterMaxVsMinRTT = jitterMax
	s.JitterStddevVsAvgRTT = float32(math.Pow(float64(float32(devSum/float32(count))), 0.5))
}

// olderHalf returns the first sequence and the length of the older half of
// a window of n entries ending before next: the part the loss and
// bandwidth estimates look at.
func olderHalf(next uint16, n int) (uint16, int) {
	return uint16(int(next) - n), n / 2
}

// smooth moves *v towards sample as the C library does.
func smooth(v *float32, sample, factor float32) {
	if math.Abs(float64(*v-sample)) > 0.00001 {
		*v += float32((sample - *v) * factor)
	} else {
		*v = sample
	}
}

// kbps smooths *v towards the rate of bytes sent over [start, finish]; with
// no time span (fewer than two distinct times) it leaves *v unchanged.
func kbps(v *float32, bytes int, start, finish float64, factor float32) {
	if start == math.MaxFloat32 || finish <= start {
		return
	}
	rate := float32(float64(bytes) / (finish - start) * 8 / 1000)
	smooth(v, rate, factor)
}

// The loops below keep their sums in locals: accumulating through a
// struct in memory made each iteration wait for the last one's store.

// updateSent recomputes the packet loss and the sent and acked bandwidth,
// in one pass over the older half of the sent window.
func (e *Endpoint) updateSent() {
	var packets, dropped, sentBytes, ackedBytes int
	sentStart, sentFinish := float64(math.MaxFloat32), 0.0
	ackedStart, ackedFinish := float64(math.MaxFloat32), 0.0
	first, n := olderHalf(e.sent.sequence, len(e.sent.slots))
	for i := 0; i < n; i++ {
		j := e.sent.find(first + uint16(i))
		if j < 0 {
			continue
		}
		r := &e.sentData[j]
		packets++
		sentBytes += int(r.bytes)
		if r.time < sentStart {
			sentStart = r.time
		}
		if r.time > sentFinish {
			sentFinish = r.time
		}
		if !r.acked {
			dropped++
			continue
		}
		ackedBytes += int(r.bytes)
		if r.time < ackedStart {
			ackedStart = r.time
		}
		if r.time > ackedFinish {
			ackedFinish = r.time
		}
	}
	if packets == 0 {
		e.stats.PacketLoss = 0
	} else {
		loss := float32(float32(dropped)/float32(packets)) * 100
		smooth(&e.stats.PacketLoss, loss, e.cfg.PacketLossSmoothingFactor)
	}
	factor := e.cfg.BandwidthSmoothingFactor
	kbps(&e.stats.SentKbps, sentBytes, sentStart, sentFinish, factor)
	kbps(&e.stats.AckedKbps, ackedBytes, ackedStart, ackedFinish, factor)
}

// updateReceived recomputes the received bandwidth.
func (e *Endpoint) updateReceived() {
	bytes, start, finish := 0, float64(math.MaxFloat32), 0.0
	first, n := olderHalf(e.recv.sequence, len(e.recv.slots))
	for i := 0; i < n; i++ {
		if j := e.recv.find(first + uint16(i)); j >= 0 {
			r := &e.recvData[j]
			bytes += int(r.bytes)
			if r.time < start {
				start = r.time
			}
			if r.time > finish {
				finish = r.time
			}
		}
	}
	kbps(&e.stats.ReceivedKbps, bytes, start, finish, e.cfg.BandwidthSmoothingFactor)
}
