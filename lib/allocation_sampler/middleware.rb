# frozen_string_literal: true

# allocation_sampler/middleware.rb: a Rack middleware that labels each
# request for the sampling GC and serves its profiles as Go's
# net/http/pprof does, so `go tool pprof http://HOST:PORT/debug/pprof/heap`
# works unchanged.
#
#   require "allocation_sampler/middleware"
#   use ObjectSpace::AllocationSampler::Middleware
#
#   GET /debug/pprof/heap             in use now (?gc=1: after a full GC)
#   GET /debug/pprof/allocs           allocations since start
#   GET /debug/pprof/allocs?seconds=N allocations during the next N seconds
#   GET /debug/pprof/retention        in use now, by shortest retention path
#                                     from a GC root (one walk of the heap,
#                                     the program paused meanwhile)
#
# Every other request runs inside
# AllocationSampler.with_labels(endpoint: "GET /path"), so its samples
# carry that label (alloc_* and inuse_*).  Options:
#
#   labels:      ->(env) { Hash }: the labels of a request (false: none)
#   allow:       addresses or networks (Strings, IPAddr) allowed besides
#                loopback
#   token:       a secret: a request with "Authorization: Bearer TOKEN"
#                is allowed from anywhere
#   max_seconds: the longest ?seconds= (default 600)
#   prefix:      where the routes live (default "/debug/pprof")
#
# Profiles are internal data: a request from outside loopback (or one a
# proxy forwarded, X-Forwarded-For / Forwarded, for a client outside) is
# refused with 403 unless allowed.  Errors get a status and a one-line
# message: 503 when the sampler is not running, 400 for a bad seconds=,
# 404 and 405 for other paths and methods, 500 for anything else; a
# profile request never raises into the server, and blocks its own thread
# only, for at most its seconds.
require "ipaddr"

module ObjectSpace
  module AllocationSampler
    class Middleware
      CONTENT_TYPE = "application/octet-stream"
      LOOPBACK = [IPAddr.new("127.0.0.0/8"), IPAddr.new("::1")].freeze
      DEFAULT_LABELS = ->(env) { { endpoint: "#{env["REQUEST_METHOD"]} #{env["PATH_INFO"]}" } }

      def initialize(app, labels: DEFAULT_LABELS, allow: [], token: nil, max_seconds: 600, prefix: "/debug/pprof")
        raise ArgumentError, "labels must respond to #call or be false (got #{labels.inspect})" unless labels == false || labels.respond_to?(:call)
        raise ArgumentError, "max_seconds must be a positive Integer (got #{max_seconds.inspect})" unless max_seconds.is_a?(Integer) && max_seconds > 0
        raise ArgumentError, "token must be a non-empty String or nil (got #{token.class})" unless token.nil? || (token.is_a?(String) && !token.empty?)

        @app = app
        @labels = labels
        @allow = LOOPBACK + Array(allow).map { |a| a.is_a?(IPAddr) ? a : IPAddr.new(a.to_s) }
        @token = token
        @max_seconds = max_seconds
        @prefix = prefix.chomp("/")
      rescue IPAddr::InvalidAddressError => e
        raise ArgumentError, "allow: #{e.message}"
      end

      def call(env)
        path = env["PATH_INFO"].to_s
        return serve(env, path.delete_prefix(@prefix)) if path == @prefix || path.start_with?("#{@prefix}/")

        labels = request_labels(env)
        return @app.call(env) if labels.nil? || labels.empty?

        AllocationSampler.with_labels(**labels) { @app.call(env) }
      end

      private

      def request_labels(env)
        return nil unless @labels && AllocationSampler.respond_to?(:with_labels)

        labels = @labels.call(env)
        labels.is_a?(Hash) ? labels.transform_keys(&:to_sym) : nil
      rescue StandardError => e
        warn "allocation_sampler/middleware: labels: #{e.class}: #{e.message}" unless @warned
        @warned = true
        nil
      end

      def serve(env, route)
        return error(403, "profiles are served to loopback clients only (allow: or token: let others in)") unless allowed?(env)
        return error(405, "only GET and HEAD are served here") unless %w[GET HEAD].include?(env["REQUEST_METHOD"])

        query = parse_query(env["QUERY_STRING"].to_s)
        case route
        when "/heap" then heap(query)
        when "/allocs" then allocs(query)
        when "/retention" then retention
        else error(404, "no profile here: #{@prefix}/heap (?gc=1), #{@prefix}/allocs (?seconds=N) and " \
                        "#{@prefix}/retention are served")
        end
      rescue StandardError => e
        error(500, "#{e.class}: #{e.message}")
      end

      def heap(query)
        return not_running unless running?

        GC.start if query["gc"] && query["gc"] != "0"
        profile(AllocationSampler.pprof(default_sample_type: "inuse_space"), "heap")
      end

      def retention
        return not_running unless running?

        profile(AllocationSampler.pprof(view: :retention), "retention")
      end

      def allocs(query)
        return not_running unless running?
        return profile(AllocationSampler.pprof, "allocs") unless query.key?("seconds")

        text = query["seconds"]
        seconds = Integer(text, 10, exception: false)
        unless seconds && seconds >= 1 && seconds <= @max_seconds
          return error(400, "seconds must be an integer from 1 to #{@max_seconds} (got #{text.inspect})")
        end

        delta = AllocationSampler::Delta.new
        sleep seconds
        return error(503, "the allocation sampler stopped during the #{seconds} seconds") unless running?

        profile(delta.pprof, "allocs")
      end

      def running?
        AllocationSampler.respond_to?(:enabled?) && AllocationSampler.enabled?
      end

      def not_running
        unless AllocationSampler.respond_to?(:enabled?)
          return error(503, "the sampling GC is not loaded (run with RUBY_GC_LIBRARY=sampling)")
        end

        error(503, "the allocation sampler is not running (start it with ObjectSpace::AllocationSampler.start " \
                   "or RUBY_GC_SAMPLING)")
      end

      def profile(bytes, name)
        [200, { "content-type" => CONTENT_TYPE, "content-disposition" => %(attachment; filename="#{name}"),
                "content-length" => bytes.bytesize.to_s }, [bytes]]
      end

      def error(status, message)
        body = "#{message}\n"
        [status, { "content-type" => "text/plain; charset=utf-8", "x-content-type-options" => "nosniff",
                   "content-length" => body.bytesize.to_s }, [body]]
      end

      def parse_query(string)
        string.split("&").each_with_object({}) do |pair, h|
          key, value = pair.split("=", 2)
          h[key] = value.to_s unless key.nil? || key.empty?
        end
      end

      # The client and every address a proxy says it forwarded for.
      def allowed?(env)
        return true if @token && token_given?(env)

        addresses = [env["REMOTE_ADDR"]]
        addresses.concat(env["HTTP_X_FORWARDED_FOR"].to_s.split(",")) if env["HTTP_X_FORWARDED_FOR"]
        env["HTTP_FORWARDED"].to_s.scan(/for=("?)\[?([^\]",;]+)\]?\1/i) { addresses << $2 } if env["HTTP_FORWARDED"]
        addresses.all? { |a| allowed_address?(a.to_s.strip) }
      end

      def allowed_address?(text)
        address = IPAddr.new(text)
        address = address.native if address.ipv4_mapped?
        @allow.any? { |net| net.family == address.family && net.include?(address) }
      rescue IPAddr::Error
        false
      end

      def token_given?(env)
        given = env["HTTP_AUTHORIZATION"].to_s[/\ABearer\s+(\S+)\z/, 1]
        return false unless given && given.bytesize == @token.bytesize

        given.bytes.zip(@token.bytes).sum { |a, b| a ^ b }.zero?   # in constant time
      end
    end
  end
end
