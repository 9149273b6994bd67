# frozen_string_literal: true

# allocation_sampler/pprof_reader.rb: reads a pprof profile (profile.proto,
# gzipped or not) into plain Ruby objects, and writes it as text in the
# layout of Go's heap profile at ?debug=1, for the middleware's debug=1.
#
#   p = ObjectSpace::AllocationSampler::PprofReader.read(bytes)
#   p.sample_types        # => [["alloc_objects", "count"], ...]
#   p.samples             # => [Sample(location_ids, values, labels {"k" => "v"})]
#   p.locations           # => {id => Location(id, mapping_id, address, lines [[function_id, line]])}
#   p.functions           # => {id => Function(id, name, filename)}
#   ObjectSpace::AllocationSampler::PprofReader.text(bytes)   # => String
#
# The text: a header "heap profile: I: IB [A: AB] @ heap/PERIOD" (in use
# objects and bytes, allocated objects and bytes), then a record a stack,
# most bytes in use first: its four values, "@", its Location addresses,
# and a "#" line a frame (address, function, file:line) and one for its
# labels.  Unlike Go's, the values are estimates already (weights summed),
# not raw sample counts.
require "zlib"

module ObjectSpace
  module AllocationSampler
    module PprofReader
      Profile = Struct.new(:sample_types, :samples, :locations, :functions, :mappings, :strings, :comments,
                           :period, :time_nanos, :duration_nanos, :default_sample_type)
      Sample = Struct.new(:location_ids, :values, :labels)
      Location = Struct.new(:id, :mapping_id, :address, :lines)
      Function = Struct.new(:id, :name, :filename)

      # The fields of one message: yields (field number, value) where the
      # value is an Integer (varint, fixed) or a String (length-delimited).
      class Message
        def initialize(bytes) = (@b = bytes.b)

        def each
          pos = 0
          while pos < @b.bytesize
            key, pos = varint(pos)
            case key & 7
            when 0 then value, pos = varint(pos)
            when 1 then value, pos = @b.unpack1("Q<", offset: pos), pos + 8
            when 5 then value, pos = @b.unpack1("L<", offset: pos), pos + 4
            when 2
              len, pos = varint(pos)
              value, pos = @b.byteslice(pos, len), pos + len
            else raise ArgumentError, "not a pprof profile (wire type #{key & 7})"
            end
            yield key >> 3, value
          end
        end

        # A packed run of varints, or one varint.
        def self.ints(value)
          return [value] if value.is_a?(Integer)

          new(value).varints
        end

        def varints
          out = []
          pos = 0
          while pos < @b.bytesize
            v, pos = varint(pos)
            out << v
          end
          out
        end

        private

        def varint(pos)
          v = shift = 0
          loop do
            byte = @b.getbyte(pos) or raise ArgumentError, "not a pprof profile (truncated)"
            pos += 1
            v |= (byte & 0x7f) << shift
            return [v, pos] if byte < 0x80

            shift += 7
          end
        end
      end

      module_function

      def read(bytes)
        bytes = Zlib.gunzip(bytes) if bytes.b.start_with?("\x1f\x8b".b)
        p = Profile.new([], [], {}, {}, [], [], [], 0, 0, 0, 0)
        raw_types = []
        raw_samples = []
        Message.new(bytes).each do |field, v|
          case field
          when 1 then raw_types << pairs(v)
          when 2 then raw_samples << v
          when 3 then p.mappings << pairs(v)
          when 4 then location(p, v)
          when 5
            f = pairs(v)
            p.functions[f[1]] = [f[1], f[2], f[4]]
          when 6 then p.strings << v.force_encoding(Encoding::UTF_8)
          when 9 then p.time_nanos = v
          when 10 then p.duration_nanos = v
          when 12 then p.period = v
          when 13 then p.comments.concat(Message.ints(v))
          when 14 then p.default_sample_type = v
          end
        end
        s = p.strings
        p.sample_types = raw_types.map { |t| [s[t[1].to_i], s[t[2].to_i]] }
        p.functions.transform_values! { |id, name, file| Function.new(id, s[name.to_i], s[file.to_i]) }
        p.comments.map! { |i| s[i] }
        p.default_sample_type = s[p.default_sample_type]
        p.samples = raw_samples.map { |m| sample(m, s) }
        p
      end

      # field => value of a message's varint fields (the last one wins)
      def pairs(bytes)
        h = {}
        Message.new(bytes).each { |f, v| h[f] = v }
        h
      end

      def location(p, bytes)
        l = Location.new(0, 0, 0, [])
        Message.new(bytes).each do |f, v|
          case f
          when 1 then l.id = v
          when 2 then l.mapping_id = v
          when 3 then l.address = v
          when 4
            line = pairs(v)
            l.lines << [line[1].to_i, line[2].to_i]
          end
        end
        p.locations[l.id] = l
      end

      def sample(bytes, strings)
        s = Sample.new([], [], {})
        Message.new(bytes).each do |f, v|
          case f
          when 1 then s.location_ids.concat(Message.ints(v))
          when 2 then s.values.concat(Message.ints(v).map { |x| x >= 1 << 63 ? x - (1 << 64) : x })
          when 3
            l = pairs(v)
            s.labels[strings[l[1].to_i]] = l[3] ? l[3] : strings[l[2].to_i]
          end
        end
        s
      end

      def text(bytes)
        p = read(bytes)
        index = p.sample_types.map(&:first)
        cols = %w[inuse_objects inuse_space alloc_objects alloc_space].map { |t| index.index(t) }
        values = ->(s) { cols.map { |i| i ? s.values[i] : 0 } }
        rows = p.samples.map { |s| [values.(s), s] }.sort_by { |v, _| [-v[1], -v[3]] }
        total = rows.map(&:first).transpose.map(&:sum)
        total = [0, 0, 0, 0] if total.empty?
        out = +"heap profile: #{total[0]}: #{total[1]} [#{total[2]}: #{total[3]}] @ heap/#{p.period}\n"
        rows.each do |v, s|
          locs = s.location_ids.map { |id| p.locations.fetch(id) }
          out << "#{v[0]}: #{v[1]} [#{v[2]}: #{v[3]}] @ #{locs.map { |l| format("%#x", l.address) }.join(' ')}\n"
          locs.each do |l|
            l.lines.each do |fid, line|
              f = p.functions[fid]
              out << "#\t#{format('%#x', l.address)}\t#{f&.name}\t#{f&.filename}:#{line}\n"
            end
          end
          out << "#\tlabels: #{s.labels.map { |k, val| "#{k}=#{val}" }.join(' ')}\n" unless s.labels.empty?
          out << "\n"
        end
        p.comments.each { |c| out << "# #{c}\n" }
        out << "# values are estimates (the sampled weights summed), not raw sample counts\n"
        out
      end
    end
  end
end
