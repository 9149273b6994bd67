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
# one connection per request (Connection: close), a thread per request
# while it runs (at most MAX_REQUESTS at once: 503 past that), a request
# head of at most HEAD_BYTES read within READ_SECONDS.
#
# One Ruby thread, named "allocation_sampler server", waits for
# connections.  It never changes how the program's deadlocks end: every
# POLL_SECONDS it asks the VM (helper_thread_state, threads.c) whether
# every other thread sleeps forever; if so twice in a row it sleeps
# forever too, and CRuby reports "No live threads left. Deadlock?" as it
# would have without it.  A thread that joins it (Thread.list.each(&:join))
# makes it close its listener and end.  Thread.list does show it.  A
# forked child has no server (the thread does not survive fork).  Under
# another GC (no AllocationSampler) every route answers 503 and the VM
# cannot be asked: a deadlock then hangs while the server runs.
require "socket"
require "allocation_sampler/middleware"

module ObjectSpace
  module AllocationSampler
    class Server
      POLL_SECONDS = 0.25
      MAX_REQUESTS = 8
      HEAD_BYTES = 16 * 1024
      READ_SECONDS = 10
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
        @requests = []
        @lock = Mutex.new
      end

      def start
        raise ArgumentError, "the server was started already" if @listener

        @listener = TCPServer.new(@host, @port)
        @port = @listener.local_address.ip_port
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

      private

      def not_found(prefix)
        lambda do |_env|
          body = "profiles are served under #{prefix}/: heap, allocs, retention\n"
          [404, { "content-type" => "text/plain; charset=utf-8", "content-length" => body.bytesize.to_s }, [body]]
        end
      end

      def serve_forever
        suspect = false
        until @stopping
          if @listener.wait_readable(POLL_SECONDS)
            suspect = false
            accept
            next
          end
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
        @listener.close
      end

      # What the program's threads say about this one going on waiting
      # (threads.c); nil while a request of ours runs (CRuby counts it as
      # alive), or without the sampling GC.
      def idle_state
        return nil if @lock.synchronize { @requests.any?(&:alive?) }
        return nil unless AllocationSampler.respond_to?(:helper_thread_state, true)

        AllocationSampler.send(:helper_thread_state)
      end

      def accept
        socket = @listener.accept_nonblock(exception: false)
        return if socket == :wait_readable

        @lock.synchronize do
          @requests.select!(&:alive?)
          if @requests.size >= MAX_REQUESTS
            respond(socket, [503, {}, ["#{MAX_REQUESTS} profile requests are running: try again\n"]], "GET")
            socket.close
            next
          end
          @requests << Thread.new(socket) { |s| handle(s) }.tap { |t| t.report_on_exception = false }
        end
      rescue SystemCallError, IOError
        socket&.close
      end

      def handle(socket)
        env = read_request(socket)
        response = env.is_a?(Hash) ? @routes.call(env) : env
        respond(socket, response, env.is_a?(Hash) ? env["REQUEST_METHOD"] : "GET")
      rescue StandardError => e
        respond(socket, [500, {}, ["#{e.class}: #{e.message}\n"]], "GET") rescue nil
      ensure
        socket.close
      end

      # A Rack env from the request head, or a response for a bad one.
      def read_request(socket)
        head = +""
        deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + READ_SECONDS
        until (stop = head.index("\r\n\r\n"))
          return [431, {}, ["the request head is over #{HEAD_BYTES} bytes\n"]] if head.bytesize > HEAD_BYTES

          left = deadline - Process.clock_gettime(Process::CLOCK_MONOTONIC)
          return [408, {}, ["no request within #{READ_SECONDS} seconds\n"]] if left <= 0 || !socket.wait_readable(left)

          chunk = socket.read_nonblock(4096, exception: false)
          return [400, {}, ["the connection closed inside the request head\n"]] if chunk.nil?

          head << chunk unless chunk == :wait_readable
        end
        request_line, *lines = head.byteslice(0, stop).split("\r\n")
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
