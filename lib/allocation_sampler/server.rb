# frozen_string_literal: true

# allocation_sampler/server.rb: the profile routes on a listener of their
# own, as Go programs serve net/http/pprof on a separate port bound to
# loopback.  Behind a proxy, this is the safe way: the proxy never
# reaches this port, whatever headers it sets or drops.
#
#   require "allocation_sampler/server"
#   server = ObjectSpace::AllocationSampler::Server.start(port: 6060)   # host: "127.0.0.1"
#   server.port    # the port (port: 0 picks a free one)
#   server.stop    # closes the listener, ends the thread
#
#   go tool pprof http://127.0.0.1:6060/debug/pprof/heap
#
# The routes and their rules are the middleware's (middleware.rb: heap,
# allocs, retention, the loopback and Host rules, token:, allow:,
# max_seconds:, prefix:, retention_max_objects:, all accepted here);
# every other path is 404.  Plain HTTP/1.1 from Ruby's socket library,
# one connection per request (Connection: close).  The server's thread
# reads request heads, all at once without blocking (at most
# MAX_PENDING connections waiting for theirs: a new one past that closes
# the oldest), each at most HEAD_BYTES within HEAD_SECONDS; only a
# complete head takes one of MAX_REQUESTS request slots (503 past
# that), so connections that send nothing never keep a request out.
# Each response runs on a thread of its own, which then ends its side of
# the connection and reads what the client still sends (at most
# DRAIN_BYTES for DRAIN_SECONDS) before it closes, so that a client
# whose request was refused reads the refusal, not a reset.
#
# One Ruby thread, named "allocation_sampler server", waits for
# connections.  It never changes how the program's deadlocks end: every
# POLL_SECONDS it asks the VM (helper_thread_state, threads.c) whether
# every other thread sleeps forever; if so twice in a row it sleeps
# forever too, and CRuby reports "No live threads left. Deadlock?" as it
# would have without it.  A thread that joins it (Thread.list.each(&:join))
# makes it close its listener and end.  Thread.list does show it.  A
# forked child has no server: the thread does not survive fork, and the
# child closes its copies of the listener and of the connections
# (Process._fork), so the parent's stop frees the port.  Under
# another GC (no AllocationSampler) every route answers 503 and the VM
# cannot be asked: a deadlock then hangs while the server runs.
require "socket"
require "allocation_sampler/middleware"

module ObjectSpace
  module AllocationSampler
    class Server
      POLL_SECONDS = 0.25
      MAX_REQUESTS = 8
      MAX_PENDING = 64
      HEAD_BYTES = 16 * 1024
      HEAD_SECONDS = 2
      DRAIN_BYTES = 64 * 1024
      DRAIN_SECONDS = 1
      THREAD_NAME = "allocation_sampler server"
      REASONS = { 200 => "OK", 400 => "Bad Request", 403 => "Forbidden", 404 => "Not Found",
                  405 => "Method Not Allowed", 408 => "Request Timeout", 431 => "Request Header Fields Too Large",
                  500 => "Internal Server Error", 503 => "Service Unavailable" }.freeze

      # Starts a server; returns it once it listens.
      def self.start(port:, host: "127.0.0.1", **options)
        new(port: port, host: host, **options).start
      end

      attr_reader :host, :port, :thread

      # options: the middleware's (ArgumentError naming a bad one).
      def initialize(port:, host: "127.0.0.1", **options)
        unless port.is_a?(Integer) && port.between?(0, 65_535)
          raise ArgumentError, "port must be an Integer from 0 to 65535 (0: any free port) (got #{port.inspect})"
        end
        raise ArgumentError, "host must be a non-empty String such as \"127.0.0.1\" (got #{host.inspect})" unless host.is_a?(String) && !host.empty?

        @host = host
        @port = port
        prefix = options.fetch(:prefix, "/debug/pprof")
        @routes = Middleware.new(not_found(prefix), **options.merge(labels: false))
        @threads = []       # responding (and draining), each on its own
        @busy = 0           # request slots taken
        @pending = {}       # connection => [head so far, deadline] (the server's thread's)
        @lock = Mutex.new
      end

      def start
        raise ArgumentError, "the server was started already" if @listener

        @listener = TCPServer.new(@host, @port)
        @port = @listener.local_address.ip_port
        Server.running_add(self)
        @thread = Thread.new { serve_forever }
        @thread.name = THREAD_NAME
        @thread.report_on_exception = false
        self
      end

      # Closes the listener and waits for the thread (requests in flight
      # finish on their own threads).
      def stop
        @stopping = true
        @thread&.wakeup if @thread&.status == "sleep"   # (asleep after a false :deadlock)
        @thread&.join
        nil
      end

      def running? = !!@thread&.alive?

      @running = []
      @running_lock = Mutex.new
      class << self
        def running_add(server) = @running_lock.synchronize { @running << server }
        def running_delete(server) = @running_lock.synchronize { @running.delete(server) }

        # In a forked child: the servers' listeners and connections are the
        # parent's (their threads are gone): closed, so that the port is
        # free once the parent stops, whatever the children do.
        def after_fork_child
          servers = @running
          @running = []
          @running_lock = Mutex.new
          servers.each { |server| server.send(:close_in_child) }
        end
      end

      # (Process._fork, which every fork goes through)
      module ForkHook
        def _fork
          pid = super
          Server.after_fork_child if pid.zero?
          pid
        end
      end
      Process.singleton_class.prepend(ForkHook)

      private

      def close_in_child
        @stopping = true
        @pending.each_key { |socket| socket.close unless socket.closed? }
        @pending.clear
        @listener.close unless @listener.closed?
      rescue IOError, SystemCallError
        nil
      end

      def not_found(prefix)
        lambda do |_env|
          body = "profiles are served under #{prefix}/: heap, allocs, retention\n"
          [404, { "content-type" => "text/plain; charset=utf-8", "content-length" => body.bytesize.to_s }, [body]]
        end
      end

      def serve_forever
        suspect = false
        until @stopping
          expire_heads
          ready, = IO.select([@listener, *@pending.keys], nil, nil, wait_seconds)
          if ready
            suspect = false
            ready.each { |io| io.equal?(@listener) ? accept : read_head(io) }
            next
          end
          next unless @pending.empty?

          case idle_state
          when :joined then break
          when :deadlock
            # (twice in a row: a wakeup on its way has arrived by now)
            if suspect
              Thread.stop
              suspect = false
            else
              suspect = true
            end
          else suspect = false
          end
        end
      ensure
        Server.running_delete(self)
        @pending.each_key { |socket| socket.close unless socket.closed? }
        @pending.clear
        @listener.close unless @listener.closed?
      end

      def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

      # Until the next poll, or the first head's deadline.
      def wait_seconds
        first = @pending.each_value.map { |_, deadline| deadline }.min
        first ? (first - now).clamp(0, POLL_SECONDS) : POLL_SECONDS
      end

      # What the program's threads say about this one going on waiting
      # (threads.c); nil while a request of ours runs (CRuby counts it as
      # alive), or without the sampling GC.
      def idle_state
        return nil if @lock.synchronize { @threads.any?(&:alive?) }
        return nil unless AllocationSampler.respond_to?(:helper_thread_state, true)

        AllocationSampler.send(:helper_thread_state)
      end

      def accept
        socket = @listener.accept_nonblock(exception: false)
        return if socket == :wait_readable

        if @pending.size >= MAX_PENDING
          oldest, = @pending.min_by { |_, (_, deadline)| deadline }
          @pending.delete(oldest)
          oldest.close
        end
        @pending[socket] = [+"", now + HEAD_SECONDS]
      rescue SystemCallError, IOError
        socket.close if socket.is_a?(IO) && !socket.closed?
      end

      # Reads what the connection has sent of its head (never past
      # HEAD_BYTES); a complete head is a request.
      def read_head(socket)
        head, = @pending[socket]
        chunk = socket.read_nonblock(HEAD_BYTES + 1 - head.bytesize, exception: false)
        return if chunk == :wait_readable
        return dispatch(socket, [400, {}, ["the connection closed inside the request head\n"]]) if chunk.nil?

        head << chunk
        stop = head.index("\r\n\r\n")
        if stop && stop + 4 <= HEAD_BYTES
          dispatch(socket, head.byteslice(0, stop))
        elsif head.bytesize > HEAD_BYTES || stop
          dispatch(socket, [431, {}, ["the request head is over #{HEAD_BYTES} bytes\n"]])
        end
      rescue SystemCallError, IOError
        @pending.delete(socket)
        socket.close unless socket.closed?
      end

      def expire_heads
        t = now
        late = @pending.select { |_, (_, deadline)| deadline <= t }.keys
        late.each { |socket| dispatch(socket, [408, {}, ["no complete request head within #{HEAD_SECONDS} seconds\n"]]) }
      end

      # A thread of its own answers the connection: a request (its head)
      # while a slot is free, else 503; a refusal (a response) as it is.
      # Past MAX_PENDING + MAX_REQUESTS threads the connection is closed.
      def dispatch(socket, head_or_response)
        @pending.delete(socket)
        @lock.synchronize do
          @threads.select!(&:alive?)
          if @threads.size >= MAX_PENDING + MAX_REQUESTS
            socket.close
            next
          end
          slot = head_or_response.is_a?(String) && @busy < MAX_REQUESTS
          @busy += 1 if slot
          response = if slot || !head_or_response.is_a?(String) then head_or_response
                     else [503, {}, ["#{MAX_REQUESTS} profile requests are running: try again\n"]]
                     end
          @threads << Thread.new(socket, response, slot) { |s, r, taken| answer(s, r, taken) }
                            .tap { |t| t.report_on_exception = false }
        end
      end

      def answer(socket, head_or_response, slot)
        env = head_or_response.is_a?(String) ? request_env(socket, head_or_response) : head_or_response
        response = env.is_a?(Hash) ? @routes.call(env) : env
        respond(socket, response, env.is_a?(Hash) ? env["REQUEST_METHOD"] : "GET")
      rescue StandardError => e
        respond(socket, [500, {}, ["#{e.class}: #{e.message}\n"]], "GET") rescue nil
      ensure
        @lock.synchronize { @busy -= 1 } if slot
        drain_close(socket)
      end

      # Ends our side (the client sees the whole response), reads what the
      # client still sends, then closes: closing with unread bytes would
      # reset the connection, and the client could lose the response.
      def drain_close(socket)
        socket.close_write
        deadline = now + DRAIN_SECONDS
        left = DRAIN_BYTES
        while left > 0 && (wait = deadline - now) > 0 && socket.wait_readable(wait)
          chunk = socket.read_nonblock([left, 4096].min, exception: false)
          break if chunk.nil?

          left -= chunk.bytesize if chunk.is_a?(String)
        end
      rescue SystemCallError, IOError
        nil
      ensure
        socket.close unless socket.closed?
      end

      # A Rack env from the request head, or a response for a bad one.
      def request_env(socket, head)
        request_line, *lines = head.split("\r\n")
        method, target, version = request_line.to_s.split(" ", 3)
        unless method && target&.start_with?("/") && version&.match?(%r{\AHTTP/\d\.\d\z})
          return [400, {}, ["a request line such as \"GET /debug/pprof/heap HTTP/1.1\" was expected\n"]]
        end

        path, query = target.split("?", 2)
        env = { "REQUEST_METHOD" => method, "SCRIPT_NAME" => "", "PATH_INFO" => path, "QUERY_STRING" => query.to_s,
                "SERVER_PROTOCOL" => version, "REMOTE_ADDR" => socket.remote_address.ip_address,
                "SERVER_NAME" => @host, "SERVER_PORT" => @port.to_s, "rack.url_scheme" => "http" }
        lines.each do |line|
          name, value = line.split(":", 2)
          return [400, {}, ["a header line without a colon\n"]] unless value

          key = "HTTP_#{name.strip.upcase.tr("-", "_")}"
          env[key] = env.key?(key) ? "#{env[key]}, #{value.strip}" : value.strip
        end
        env
      end

      def respond(socket, response, method)
        status, headers, body = response
        chunks = []
        body.each { |chunk| chunks << chunk }
        body.close if body.respond_to?(:close)
        text = chunks.join
        head = +"HTTP/1.1 #{status} #{REASONS.fetch(status, "Status")}\r\n"
        headers = { "content-type" => "text/plain; charset=utf-8" }.merge(headers)
        headers["content-length"] = text.bytesize.to_s
        headers["connection"] = "close"
        headers.each { |k, v| head << "#{k}: #{v}\r\n" }
        head << "\r\n"
        socket.write(head)
        socket.write(text) unless method == "HEAD"
      rescue SystemCallError, IOError
        nil
      end
    end
  end
end
