# frozen_string_literal: true
#
# report.rb: the reading side that is easiest in Ruby: collapsed stacks for
# flame graph tools, and a text report of the top allocation sites.  It is
# compiled into the library (report_rb.inc) and evaluated the first time
# one of these methods is called, never at boot and never during GC.
#
# Values, per sample:
#   alloc_space    its weight: the estimated bytes it stands for
#   alloc_objects  weight / slot size: the estimated objects
#   inuse_space    alloc_space if the object is still alive, else 0
#   inuse_objects  alloc_objects if alive, else 0
# Sums over a profile estimate the totals: bytes allocated while sampling
# (alloc_*) and bytes of those allocations still alive (inuse_*).
module ObjectSpace::AllocationSampler
  VALUES = %i[alloc_space alloc_objects inuse_space inuse_objects].freeze

  class << self
    # Writes one line per distinct stack: "root;...;leaf value", the format
    # of flamegraph.pl, speedscope and inferno.  Returns the lines written.
    def write_collapsed(path_or_io, value: :alloc_space)
      check_value(value, "value")
      totals = Hash.new(0.0)
      samples.each do |s|
        v = sample_value(s, value)
        next if v.zero?
        totals[s.frames.reverse_each.map { |f| f[2].tr(";", ":") }.join(";")] += v
      end
      text = totals.sort.map { |stack, v| "#{stack} #{v.round}\n" }.join
      write_text(path_or_io, text, "path_or_io")
      totals.size
    end

    # Prints the top allocation sites (class and file:line of the
    # allocation), by estimated bytes or objects, allocated or in use.
    def report(io = $stdout, top: 20, by: :alloc_space)
      check_value(by, "by")
      unless top.is_a?(Integer) && top >= 1
        raise ArgumentError, "top must be an Integer >= 1 (got #{top.inspect})"
      end
      unless io.respond_to?(:write)
        raise ArgumentError, "io must respond to write (got #{io.inspect})"
      end
      all = samples
      sites = Hash.new { |h, k| h[k] = { alloc_space: 0.0, alloc_objects: 0.0, inuse_space: 0.0, inuse_objects: 0.0, ages: [] } }
      all.each do |s|
        frame = s.frames.first
        site = sites[[class_name(s), frame ? "#{frame[0]}:#{frame[1]}" : "?"]]
        VALUES.each { |v| site[v] += sample_value(s, v) }
        site[:ages] << s.age if s.live?
      end
      total = sites.sum { |_, h| h[by] }
      st = stats
      io.write(format("Allocation sites by %s: %d samples, interval %s (%s), estimated %s allocated, %s in use\n",
                      by, all.size, bytes(st[:interval]), st[:mode],
                      bytes(sites.sum { |_, h| h[:alloc_space] }), bytes(sites.sum { |_, h| h[:inuse_space] })))
      io.write(format("%4s %10s %6s %10s %6s %5s  %-24s %s\n", "rank", "bytes", "share", "objects", "live", "age", "class", "site"))
      ranked = sites.sort_by { |key, h| [-h[by], key] }.first(top)
      ranked.each_with_index do |(key, h), i|
        live = h[:alloc_space].zero? ? 0.0 : h[:inuse_space] / h[:alloc_space]
        io.write(format("%4d %10s %5.1f%% %10d %5.1f%% %5s  %-24s %s\n", i + 1, bytes(h[by.to_s.end_with?("space") ? by : :alloc_space]),
                        total.zero? ? 0.0 : 100.0 * h[by] / total, h[by.to_s.sub("space", "objects").to_sym].round,
                        100.0 * live, median(h[:ages]), key[0], key[1]))
      end
      io.write("(no samples: start the sampler, or widen its interval)\n") if all.empty?
      ranked.size
    end

    private

    def check_value(value, name)
      return if VALUES.include?(value)
      raise ArgumentError, "#{name} must be one of #{VALUES.map(&:inspect).join(', ')} (got #{value.inspect})"
    end

    def sample_value(s, value)
      live = value == :inuse_space || value == :inuse_objects
      return 0.0 if live && !s.live?
      value.to_s.end_with?("space") ? s.weight.to_f : s.weight.to_f / s.size
    end

    def class_name(s)
      k = s.klass
      return "(#{s.type}#{s.imemo_type ? ":#{s.imemo_type}" : ''})" if k.nil?
      k.name || k.inspect
    end

    def median(a)
      return "-" if a.empty?
      a.sort[a.size / 2].to_s
    end

    def bytes(n)
      n = n.to_f
      units = %w[B KiB MiB GiB TiB]
      i = 0
      while n >= 1024 && i < units.size - 1
        n /= 1024
        i += 1
      end
      i.zero? ? "#{n.round} B" : format("%.1f %s", n, units[i])
    end

    def write_text(dest, text, name)
      if dest.respond_to?(:write) && !dest.is_a?(String)
        dest.write(text)
      elsif dest.is_a?(String) || dest.respond_to?(:to_path)
        File.binwrite(dest, text)
      else
        raise ArgumentError, "#{name} must be a path (String, Pathname) or an IO (got #{dest.inspect})"
      end
    end
  end
end
