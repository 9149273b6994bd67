# frozen_string_literal: true

# allocation_sampler/middleware.rb: a Rack middleware that labels each
# request for the sampling GC and serves its profiles as Go's
# net/http/pprof does, so `go tool pprof http://HOST:PORT/debug/pprof/heap`
# works unchanged.
#
#   require "allocation_sampler/middleware"
#   use ObjectSpace::AllocationSampler::Middleware
#
#   GET /debug/pprof/heap             in use now (?gc=1: after a full GC;
#                                     heap and allocs, ?debug=1: text)
#   GET /debug/pprof/heap?seconds=N   allocations during the next N seconds
#                                     (a delta, as Go's handler), in use then
#   GET /debug/pprof/allocs           allocations since start
#   GET /debug/pprof/allocs?seconds=N allocations during the next N seconds
#   GET /debug/pprof/delta_heap       allocations since the previous request
#                                     to it (one reader, as godeltaprof's),
#                                     in use now (?gc=1, ?seconds=N as
#                                     allocs, ?debug=1: text)
#   ?min_gcs=N (heap, delta_heap)     in-use values count only samples that
#                                     survived at least N GCs (alloc_* all)
#   GET /debug/pprof/retention        in use now, by shortest retention path
#                                     from a GC root (one walk of the heap,
#                                     the program paused meanwhile; the walk
#                                     stops at retention_max_objects, and
#                                     the response says when it did)
#
# Every other request runs inside
# AllocationSampler.with_labels(endpoint: "GET /path"), so its samples
# carry that label (alloc_* and inuse_*).  Options (checked by new, which
# raises ArgumentError naming the option):
#
#   labels:      ->(env) { Hash }: the labels of a request (false: none)
#   allow:       addresses or networks (Strings, IPAddr) allowed besides
#                loopback; a request from an address listed here is
#                trusted whatever its Host says (see below)
#   token:       a secret (visible ASCII, no spaces): a request with
#                "Authorization: Bearer TOKEN" is allowed from anywhere
#   max_seconds: the longest ?seconds= (default 600)
#   prefix:      where the routes live (default "/debug/pprof"; a path
#                starting with "/", not "/" itself)
#   retention_max_objects: the retention walk's cap (default 1_000_000
#                objects, which bounds the pause; nil: no cap);
#                ?max_objects=N may lower it for one request
#
# Profiles are internal data.  A request is refused with 403 unless it
# brings the token, or
#   - every address it names is loopback or in allow: the peer
#     (REMOTE_ADDR) and each address of a forwarding header (Forwarded,
#     X-Forwarded-For, X-Real-IP, Client-IP, True-Client-IP,
#     WL-Proxy-Client-IP, ...); a forwarding header that does not parse
#     into addresses (a Forwarded element naming a parameter twice too)
#     is a refusal;
#   - and, when the peer is allowed only as loopback (no allow: entry
#     names it), nothing says a proxy sent it: its Host (and
#     X-Forwarded-Host, Forwarded's host=) names a loopback address or
#     localhost, no proxy-only header (Via, X-Forwarded-Proto, ...) comes
#     without one naming the client, and it is not HTTP/1.0 (what nginx's
#     proxy_pass speaks unless told otherwise).
# A proxy on the same host that sets none of these (Host rewritten to a
# loopback address, HTTP/1.1, no forwarding header) cannot be told from a
# local client: serve profiles on a listener of their own
# (allocation_sampler/server.rb), or use token:.  docs/production.md.
#
# Errors get a status and a one-line message: 503 when the sampler is not
# running, 400 for a bad seconds=, 404 and 405 for other paths and
# methods, 500 for anything else; a profile request never raises into the
# server, and blocks its own thread only, for at most its seconds.  A
# label never fails a request: the middleware's own values are made
# valid UTF-8 without NUL bytes and cut to LABEL_BYTES, and a label set
# with_labels refuses is dropped (one warning) and the request served.
require "ipaddr"
require_relative "pprof_reader"

module ObjectSpace
  module AllocationSampler
    class Middleware
      CONTENT_TYPE = "application/octet-stream"
      LOOPBACK = [IPAddr.new("127.0.0.0/8"), IPAddr.new("::1")].freeze
      DEFAULT_LABELS = ->(env) { { endpoint: "#{env["REQUEST_METHOD"]} #{env["PATH_INFO"]}" } }
      # A label value longer than this is cut (at a character) and ends in
      # "..."; with_labels takes 4 KiB of text a set, 16 labels.
      LABEL_BYTES = 256
      # The retention walk's default cap: a walk of this many objects
      # pauses the program about 0.2 s on the 2-core machine of
      # benchmark/results/retention_pause.md (naming the paths after it
      # adds what docs/production.md says).
      RETENTION_MAX_OBJECTS = 1_000_000
      # The walk's own limit (retention.md: max_objects is 1 to 2**31 - 1).
      WALK_MAX_OBJECTS = 2**31 - 1

      def initialize(app, labels: DEFAULT_LABELS, allow: [], token: nil, max_seconds: 600, prefix: "/debug/pprof",
                     retention_max_objects: RETENTION_MAX_OBJECTS)
        raise ArgumentError, "labels must respond to #call or be false (got #{labels.inspect})" unless labels == false || labels.respond_to?(:call)
        raise ArgumentError, "max_seconds must be a positive Integer (got #{max_seconds.inspect})" unless max_seconds.is_a?(Integer) && max_seconds > 0
        check_token(token)
        unless retention_max_objects.nil? ||
               (retention_max_objects.is_a?(Integer) && retention_max_objects.between?(1, WALK_MAX_OBJECTS))
          raise ArgumentError, "retention_max_objects must be nil or an Integer from 1 to #{WALK_MAX_OBJECTS} " \
                               "(got #{retention_max_objects.inspect})"
        end

        @app = app
        @labels = labels
        @explicit = allow_list(allow)
        @allow = LOOPBACK + @explicit
        @token = token
        @max_seconds = max_seconds
        @prefix = prefix_arg(prefix)
        @retention_max_objects = retention_max_objects
        @delta_heap_lock = Mutex.new
      end

      def call(env)
        path = env["PATH_INFO"].to_s
        return serve(env, path.delete_prefix(@prefix)) if path == @prefix || path.start_with?("#{@prefix}/")

        labels = request_labels(env)
        return @app.call(env) if labels.nil? || labels.empty?

        with_request_labels(labels) { @app.call(env) }
      end

      private

      # ---- options ----

      def check_token(token)
        return if token.nil?
        raise ArgumentError, "token must be a String or nil (got #{token.class})" unless token.is_a?(String)
        # (what an Authorization header can carry: a space would end it)
        unless token.match?(/\A[\x21-\x7e]+\z/)
          raise ArgumentError, "token must be a non-empty String of visible ASCII characters, without spaces " \
                               "(got #{token.empty? ? "an empty String" : "one that is not"})"
        end
      end

      def allow_list(allow)
        Array(allow).map do |a|
          case a
          when IPAddr then a
          when String then IPAddr.new(a)
          else raise ArgumentError, "allow: an address or network must be a String or IPAddr (got #{a.inspect})"
          end
        end
      rescue IPAddr::Error => e
        raise ArgumentError, "allow: #{e.message}"
      end

      def prefix_arg(prefix)
        raise ArgumentError, "prefix must be a String such as \"/debug/pprof\" (got #{prefix.inspect})" unless prefix.is_a?(String)

        path = prefix.chomp("/")
        unless prefix.start_with?("/") && !prefix.match?(%r{//|[?#\s\x00-\x1f\x7f]})
          raise ArgumentError, "prefix must be a path starting with \"/\", without \"//\", \"?\", \"#\" or spaces " \
                               "(got #{prefix.inspect})"
        end
        # ("" or "/" would take every request from the app)
        raise ArgumentError, "prefix must not be \"/\" or empty: the routes would hide the whole app (got #{prefix.inspect})" if path.empty?

        path
      end

      # ---- labels ----

      def request_labels(env)
        return nil unless @labels && AllocationSampler.respond_to?(:with_labels)

        labels = @labels.call(env)
        return nil unless labels.is_a?(Hash)

        labels.each_with_object({}) do |(key, value), h|
          key = label_text(key)
          h[key.to_sym] = label_text(value) unless key.empty?
        end
      rescue StandardError => e
        warn_once("labels: #{e.class}: #{e.message}")
        nil
      end

      # A label's text as with_labels takes it: valid UTF-8 (invalid bytes
      # become U+FFFD), no NUL byte, at most LABEL_BYTES bytes.
      def label_text(value)
        text = value.is_a?(Symbol) ? value.name : value.to_s
        text = if text.encoding == Encoding::UTF_8 || text.encoding == Encoding::BINARY || text.encoding == Encoding::US_ASCII
                 text.dup.force_encoding(Encoding::UTF_8).scrub
               else
                 text.encode(Encoding::UTF_8, invalid: :replace, undef: :replace)
               end
        text = text.delete("\0")
        text = "#{text.byteslice(0, LABEL_BYTES - 3).scrub("")}..." if text.bytesize > LABEL_BYTES
        text
      rescue EncodingError
        text.b.gsub(/[^\x20-\x7e]/n, "?").byteslice(0, LABEL_BYTES)
      end

      # The app inside with_labels; if with_labels refuses the set (too
      # many labels or bytes with the labels around it, a key it
      # reserves), the app without it.  An error the app raises is its own.
      def with_request_labels(labels)
        inside = false
        AllocationSampler.with_labels(**labels) do
          inside = true
          yield
        end
      rescue ArgumentError, TypeError, EncodingError => e
        raise if inside

        warn_once("labels not set: #{e.message}")
        yield
      end

      def warn_once(message)
        warn "allocation_sampler/middleware: #{message}" unless @warned
        @warned = true
      end

      def serve(env, route)
        refusal = refusal(env)
        return error(403, "profiles are served to loopback clients only (allow: or token: let others in): #{refusal}") if refusal
        return error(405, "only GET and HEAD are served here") unless %w[GET HEAD].include?(env["REQUEST_METHOD"])

        query = parse_query(env["QUERY_STRING"].to_s)
        # ?debug=1 on heap and allocs: the profile as text, as Go's (which
        # has no debug form of a delta either)
        debug = %w[/heap /allocs].include?(route) && query["debug"] && query["debug"] != "0"
        return error(400, "seconds and debug params are incompatible") if debug && query.key?("seconds")

        response = case route
                   when "/heap" then heap(query)
                   when "/allocs" then allocs(query)
                   when "/retention" then retention(query)
                   when "/delta_heap" then delta_heap(query)
                   else error(404, "no profile here: #{@prefix}/heap (?gc=1), #{@prefix}/allocs (?seconds=N), " \
                                   "#{@prefix}/delta_heap and #{@prefix}/retention are served")
                   end
        debug && response[0] == 200 ? text_profile(response[2].join) : response
      rescue StandardError => e
        error(500, "#{e.class}: #{e.message}")
      end

      # ?seconds=N: a delta, as Go's handler (alloc_* during the N
      # seconds; in-use values are those at the end, as allocs?seconds=N).
      def heap(query)
        return not_running unless running?

        min_gcs = min_gcs_param(query)
        return min_gcs if min_gcs.is_a?(Array)
        return allocs(query, min_gcs) if query.key?("seconds")

        GC.start if query["gc"] && query["gc"] != "0"
        profile(AllocationSampler.pprof(default_sample_type: "inuse_space", view: :heap, min_gcs: min_gcs), "heap")
      end

      # ?min_gcs=N: the in-use values of samples that survived N GCs
      # (0, the default: all); a 400 response for a bad value.
      def min_gcs_param(query)
        return 0 unless query.key?("min_gcs")

        text = query["min_gcs"]
        n = Integer(text, 10, exception: false)
        return n if n && n >= 0 && n <= MAX_MIN_GCS

        error(400, "min_gcs must be an integer from 0 to #{MAX_MIN_GCS} (got #{text.inspect})")
      end
      MAX_MIN_GCS = 2**32 - 1

      # One walk of the heap, the program paused meanwhile: the walk stops
      # at the cap (?max_objects=N lowers it), which bounds the pause; a
      # response whose walk was cut says so in x-retention-cut (and in the
      # profile: a comment, and <cut> at the root of the paths not found).
      def retention(query)
        return not_running unless running?

        cap = @retention_max_objects
        if query.key?("max_objects")
          text = query["max_objects"]
          wanted = Integer(text, 10, exception: false)
          unless wanted&.between?(1, cap || WALK_MAX_OBJECTS)
            return error(400, "max_objects must be an integer from 1 to #{cap || WALK_MAX_OBJECTS} (got #{text.inspect})")
          end

          cap = wanted
        end
        bytes = cap ? AllocationSampler.pprof(view: :retention, max_objects: cap) : AllocationSampler.pprof(view: :retention)
        status, headers, body = profile(bytes, "retention")
        headers["x-retention-cut"] = "the walk stopped at its cap of #{cap} objects" if cap && retention_cut?(bytes)
        [status, headers, body]
      end

      def retention_cut?(bytes)
        require "zlib"
        text = bytes.start_with?("\x1f\x8b".b) ? Zlib.gunzip(bytes) : bytes
        text.include?("(cut at the cap") || text.include?("<cut:")   # (the comment, a cut path's root)
      rescue LoadError, Zlib::Error
        false
      end

      def allocs(query, min_gcs = 0)
        return not_running unless running?
        return profile(AllocationSampler.pprof(view: :heap), "allocs") unless query.key?("seconds")

        text = query["seconds"]
        seconds = Integer(text, 10, exception: false)
        unless seconds && seconds >= 1 && seconds <= @max_seconds
          return error(400, "seconds must be an integer from 1 to #{@max_seconds} (got #{text.inspect})")
        end

        delta = AllocationSampler::Delta.new
        sleep seconds
        return error(503, "the allocation sampler stopped during the #{seconds} seconds") unless running?

        profile(delta.pprof(view: :heap, min_gcs: min_gcs), "allocs")
      end

      # What godeltaprof serves: the allocations since the previous request
      # to this route (the first: since start), so that a scraper (Grafana
      # Alloy's godeltaprof_memory) stores deltas without computing them;
      # one reader, shared by every client.  ?seconds=N is allocs?seconds=N
      # (a reader of its own: the route's stays where it was).
      def delta_heap(query)
        return not_running unless running?

        debug = query["debug"] && query["debug"] != "0"
        min_gcs = min_gcs_param(query)
        return min_gcs if min_gcs.is_a?(Array)
        if query.key?("seconds")
          return error(400, "seconds and debug params are incompatible") if debug

          return allocs(query, min_gcs)
        end
        GC.start if query["gc"] && query["gc"] != "0"
        bytes = @delta_heap_lock.synchronize do
          (@delta_heap ||= AllocationSampler::Delta.new(since: :start)).pprof(view: :heap, min_gcs: min_gcs)
        end
        return profile(bytes, "delta_heap") unless debug

        text_profile(bytes)
      end

      # A profile in Go's debug=1 text form (PprofReader.text).
      def text_profile(bytes)
        body = PprofReader.text(bytes)
        [200, { "content-type" => "text/plain; charset=utf-8", "x-content-type-options" => "nosniff",
                "content-length" => body.bytesize.to_s }, [body]]
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

      # ---- who may read profiles ----

      # Headers that name the client (Rack's names).  Forwarded and
      # X-Forwarded take RFC 7239's syntax (for=, host=); the others a
      # list of addresses.  Any other header whose name says it carries
      # a client's address (CLIENT_HEADER_NAME) is read as a list too.
      FORWARDED_HEADERS = %w[HTTP_FORWARDED HTTP_X_FORWARDED].freeze
      CLIENT_HEADER_NAME = /\AHTTP_(?:X_)?(?:ORIGINAL_)?(?:FORWARDED_FOR|REAL_IP|CLIENT_?IP|TRUE_CLIENT_IP|
                            CLUSTER_CLIENT_IP|CONNECTING_IP|CF_CONNECTING_IP|FASTLY_CLIENT_IP|ORIGINATING_IP|
                            REMOTE_IP|REMOTE_ADDR|PROXYUSER_IP|ENVOY_EXTERNAL_ADDRESS|AZURE_CLIENTIP|
                            APPENGINE_USER_IP|FORWARDED_CLIENT_IP|(?:WL_)?PROXY_CLIENT_IP)\z|
                            \AHTTP_\w*CLIENT_?(?:IP|ADDR|ADDRESS)\z/x
      # Headers that name the host the client asked for.
      HOST_HEADERS = %w[HTTP_X_FORWARDED_HOST HTTP_X_FORWARDED_SERVER HTTP_X_HOST HTTP_X_ORIGINAL_HOST].freeze
      # Headers only a proxy adds, which name no client.
      PROXY_HEADER_NAME = /\AHTTP_(?:VIA|X_FORWARDED_(?:PROTO|PORT|SCHEME|SSL|PREFIX|URI|PATH)|FRONT_END_HTTPS|
                           X_URL_SCHEME|X_ORIGINAL_URL|X_REWRITE_URL|X_ORIGINAL_URI|X_FORWARDED_PROTOCOL)\z/x

      # Why env may not read profiles, or nil when it may.
      def refusal(env)
        return nil if @token && token_given?(env)

        peer = env["REMOTE_ADDR"].to_s
        return "the client #{shown(peer)} is not allowed" unless allowed_address?(peer)

        clients = 0
        hosts = []
        env.each do |name, value|
          next unless name.start_with?("HTTP_")

          header = header_name(name)
          if FORWARDED_HEADERS.include?(name) && !(name == "HTTP_X_FORWARDED" && !value.to_s.include?("="))
            elements = forwarded_elements(value.to_s) or return "#{header} does not parse (RFC 7239): #{shown(value)}"
            elements.each do |pairs|
              node = pairs["for"] or return "#{header} names no client (for=): #{shown(value)}"
              bad = forwarded_refusal(header, node) and return bad
              clients += 1
              hosts << [header, pairs["host"]] if pairs["host"]
            end
          elsif CLIENT_HEADER_NAME.match?(name) || FORWARDED_HEADERS.include?(name)
            nodes = value.to_s.split(",", -1)
            return "#{header} is empty: it names no client" if nodes.empty?

            nodes.each do |node|
              bad = forwarded_refusal(header, node) and return bad
              clients += 1
            end
          elsif HOST_HEADERS.include?(name)
            value.to_s.split(",", -1).each { |host| hosts << [header, host] }
          elsif PROXY_HEADER_NAME.match?(name) || name.include?("FORWARDED")
            hosts << [header, nil]
          end
        end
        # trusted by an allow: entry: whatever the request says of hosts
        return nil if explicitly_allowed?(peer)

        # allowed as loopback only: refuse what a proxy sent
        host = env["HTTP_HOST"]
        return "Host #{shown(host)} is not a loopback address or localhost (a proxy's request?)" if host && !loopback_host?(host)

        hosts.each do |header, name|
          if name.nil?
            return "#{header} says a proxy sent it, and no header names the client" if clients.zero?
          elsif !loopback_host?(name)
            return "#{header} #{shown(name)} is not a loopback address or localhost"
          end
        end
        return "HTTP/1.0 from loopback (what a proxy such as nginx speaks by default)" if http10?(env)

        nil
      end

      # A header's value as a refusal shows it: quoted, at most 80 bytes.
      def shown(value)
        text = value.to_s.strip
        text = "#{text.byteslice(0, 77).scrub("")}..." if text.bytesize > 80
        text.inspect
      end

      def header_name(name)
        name.delete_prefix("HTTP_").split("_").map(&:capitalize).join("-")
      end

      # RFC 7239: elements separated by ",", pairs by ";", token=value
      # where value is a token or a quoted string.  nil unless it parses.
      FORWARDED_PAIR = /\G[ \t]*([!#$%&'*+.^_`|~0-9A-Za-z-]+)[ \t]*=[ \t]*("(?:[^"\\]|\\.)*"|[!#$%&'*+.^_`|~0-9A-Za-z:\[\]-]+)[ \t]*([;,]|\z)/
      def forwarded_elements(value)
        elements = [{}]
        pos = 0
        while pos < value.length
          m = FORWARDED_PAIR.match(value, pos) or return nil
          return nil if m.end(0) == pos

          text = m[2].start_with?('"') ? m[2][1...-1].gsub(/\\(.)/, '\\1') : m[2]
          return nil if elements.last.key?(m[1].downcase)   # (a parameter twice in one element)

          elements.last[m[1].downcase] = text
          elements << {} if m[3] == ","
          pos = m.end(0)
        end
        return nil if elements.last.empty? && elements.size > 1 || elements.first.empty?

        elements
      end

      def forwarded_refusal(header, node)
        address = node_address(node)
        return "#{header} names #{shown(node)}, not an address (a proxy's request?)" unless address
        return "#{header} names #{shown(node)}, which is not allowed" unless allowed_address?(address)

        nil
      end

      # The address in a node of a forwarding header: 192.0.2.60,
      # 192.0.2.60:8080, 2001:db8::1, [2001:db8::1], "[2001:db8::1]:4711";
      # nil for anything else ("unknown", "_hidden", "", a name).
      def node_address(node)
        text = node.strip
        text = text[1...-1] if text.length >= 2 && text.start_with?('"') && text.end_with?('"')
        case text
        when /\A\[([0-9A-Fa-f:.]+)(?:%[\w.-]+)?\](?::\d{1,5})?\z/ then $1
        when /\A(\d{1,3}(?:\.\d{1,3}){3})(?::\d{1,5})?\z/ then $1
        when /\A([0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*)(?:%[\w.-]+)?\z/ then $1
        end
      end

      # A Host (or X-Forwarded-Host) value: localhost or a loopback
      # address, with or without a port.
      def loopback_host?(value)
        text = value.to_s.strip.downcase
        name = text[/\A\[([^\]]*)\](?::\d*)?\z/, 1] || text.sub(/:\d*\z/, "")
        name.chomp(".") == "localhost" || address_in?(name, LOOPBACK)
      end

      def http10?(env)
        (env["SERVER_PROTOCOL"] || env["HTTP_VERSION"]).to_s.match?(%r{\AHTTP/(?:0\.9|1\.0)\z}i)
      end

      def allowed_address?(text) = address_in?(text, @allow)

      def explicitly_allowed?(text) = address_in?(text, @explicit)

      def address_in?(text, nets)
        return false if nets.empty?

        address = IPAddr.new(text.to_s.strip)
        address = address.native if address.ipv4_mapped?
        nets.any? { |net| net.family == address.family && net.include?(address) }
      rescue IPAddr::Error
        false
      end

      def token_given?(env)
        # (the scheme is case-insensitive: RFC 9110 section 11.1)
        given = env["HTTP_AUTHORIZATION"].to_s[/\A[ \t]*bearer[ \t]+(\S+)[ \t]*\z/i, 1]
        return false unless given && given.bytesize == @token.bytesize

        given.bytes.zip(@token.bytes).sum { |a, b| a ^ b }.zero?   # in constant time
      end
    end
  end
end
