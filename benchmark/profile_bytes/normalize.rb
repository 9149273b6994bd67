# normalize.rb FILE...: rewrites each profile in place without what a run
# cannot repeat (the clock, the pid, the process's memory), leaving every
# other byte as the library wrote it: a pprof profile (.pb, decompressed)
# loses its top-level time_nanos and duration_nanos (fields 9 and 10),
# and its two memory comments (the profiler's own memory, which a change
# to the library's structures is meant to move, and the RSS split) keep
# their words, not their numbers; the report loses its seconds; DHAT its
# pid.
def encode_varint(v)
  out = +"".b
  while v >= 0x80
    out << ((v & 0x7f) | 0x80)
    v >>= 7
  end
  out << v
end

MEMORY_COMMENT = /\A(profiler memory|memory \(memory_split\)):/

def varint(s, i)
  v = 0
  shift = 0
  loop do
    b = s.getbyte(i)
    i += 1
    v |= (b & 0x7f) << shift
    shift += 7
    return [v, i] if b < 0x80
  end
end

ARGV.each do |path|
  s = File.binread(path)
  out =
    case path
    when /\.pb\z/
      kept = +"".b
      i = 0
      while i < s.bytesize
        start = i
        key, i = varint(s, i)
        case key & 7
        when 0 then _, i = varint(s, i)
        when 1 then i += 8
        when 2 then len, i = varint(s, i); i += len
        when 5 then i += 4
        else abort "#{path}: wire type #{key & 7} at #{start}"
        end
        next if [9, 10].include?(key >> 3)

        field = s.byteslice(start, i - start)
        if key == (6 << 3 | 2) && (str = s.byteslice(i - len, len)) =~ MEMORY_COMMENT
          str = str.gsub(/\d+/, "N")
          field = encode_varint(key) + encode_varint(str.bytesize) + str
        end
        kept << field
      end
      kept
    when /report/ then s.gsub(/\d+(\.\d+)? s after start/, "T s after start")
    when /dhat/ then s.gsub(/"pid":\d+/, '"pid":0')
    else s
    end
  File.binwrite(path, out)
end
