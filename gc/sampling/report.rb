# frozen_string_literal: true
#
# report.rb: the reading side that is easiest in Ruby: collapsed stacks for
# flame graph tools, and a text report of the top allocation sites.  It is
# compiled into the library (report_rb.inc) and evaluated the first time
# `report`, `write_collapsed` or `retention_report` is called (never at
# boot, never during GC); those stay C methods that call the private
# methods here.  Each *_impl checks its arguments and builds the whole
# text, returning [destination, text, result]: the C method writes the
# text only after (report.c), so no read is open while the program's IO
# runs.
#
# Both read site_totals: one row per site (a stack, a class and a type)
# with totals of every sample taken there, so they stay exact however many
# records were evicted or dropped:
#   alloc_space    estimated bytes allocated there (the samples' weights)
#   alloc_objects  estimated objects (weight / slot size, summed)
#   inuse_space    the part of alloc_space whose objects are still alive
#   inuse_objects  the same in objects
# In-use values (and ages) come from the records kept: with evictions or
# drops they cover the records kept, and the report says so.  Each row
# also has the lives of its recorded samples (LIFE_INDEX): bytes dead by
# GCs survived (LIFE_BUCKETS), promoted, promoted then dead, and heaptime
# of the dead and of the live (bytes x allocation-clock bytes lived).
module ObjectSpace::AllocationSampler
  VALUES = %i[alloc_space alloc_objects inuse_space inuse_objects].freeze
  # the index of each value in a site_totals row
  VALUE_INDEX = { alloc_space: 4, alloc_objects: 5, inuse_space: 6, inuse_objects: 7 }.freeze
  LIFE_INDEX = 10
  LIFE_BUCKETS = ["0", "1", "2-3", "4-7", "8-15", "16+"].freeze

  class << self
    private

    # Writes one line per distinct stack: "root;...;leaf value", the format
    # of flamegraph.pl, speedscope and inferno.  Returns the lines written.
    def write_collapsed_impl(path_or_io, value: :alloc_space)
      check_value(value, "value")
      dest = output(path_or_io, "path_or_io")
      totals = Hash.new(0.0)
      site_totals.each do |row|
        v = row[VALUE_INDEX[value]]
        next if v.zero?
        stack = row[0].reverse_each.map { |f| f[2].tr(";", ":") }.join(";")
        # malloc'd bytes end in a pseudo-frame, so flame graphs show the kind
        stack += ";[malloc]" if row[2] == :malloc
        totals[stack] += v
      end
      text = +""
      totals.sort.each { |stack, v| text << "#{stack} #{v.round}\n" unless v.round.zero? }
      [dest, text, totals.size]
    end

    # Prints the top allocation sites (class and file:line of the
    # allocation), by estimated bytes or objects, allocated or in use.
    def report_impl(io = $stdout, top: 20, by: :alloc_space)
      check_value(by, "by")
      check_report_args(io, top)
      out = +""
      rows = site_totals
      sites = by_place(rows)
      total = sites.sum { |_, h| h[by] }
      st = stats
      # the bytes column shows bytes of the same kind (allocated or in use)
      bytes_key = by.to_s.start_with?("inuse") ? :inuse_space : :alloc_space
      objects_key = by.to_s.start_with?("inuse") ? :inuse_objects : :alloc_objects
      out.concat(format("Allocation sites by %s: %d samples, interval %s (%s), %d of malloc'd bytes (class (malloc)), " \
                      "estimated %s allocated, %s in use\n",
                      by, st[:samples] + st[:malloc_samples], bytes(st[:interval]), st[:mode], st[:malloc_samples],
                      bytes(sites.sum { |_, h| h[:alloc_space] }), bytes(sites.sum { |_, h| h[:inuse_space] })))
      if st[:evicted] + st[:dropped] + st[:folded] > 0
        out.concat(format("(%d records evicted, %d dropped, %d sites folded into <other sites>: allocation totals " \
                        "are exact; in-use and ages cover the %d records kept)\n",
                        st[:evicted], st[:dropped], st[:folded], st[:records]))
      end
      out.concat(format("%4s %10s %6s %10s %6s %5s  %-24s %s\n", "rank", "bytes", "share", "objects", "live", "age", "class", "site"))
      ranked = sites.sort_by { |key, h| [-h[by], key] }
      ranked = ranked.first(top) if top < ranked.size
      ranked.each_with_index do |(key, h), i|
        live = h[:alloc_space].zero? ? 0.0 : h[:inuse_space] / h[:alloc_space]
        out.concat(format("%4d %10s %5.1f%% %10d %5.1f%% %5s  %-24s %s\n", i + 1, bytes(h[bytes_key]),
                        total.zero? ? 0.0 : 100.0 * h[by] / total, h[objects_key].round,
                        100.0 * live, median(h[:ages]), key[0], key[1]))
      end
      out.concat("(no samples: start the sampler, or widen its interval)\n") if sites.empty?
      report_lives(out, ranked)
      report_peak(out, top)
      report_labels(out, rows, by, top)
      [io, out, ranked.size]
    end

    # Rows summed by place: [class, "file:line"] => values, ages, lives.
    def by_place(rows)
      sites = Hash.new do |h, k|
        h[k] = { alloc_space: 0.0, alloc_objects: 0.0, inuse_space: 0.0, inuse_objects: 0.0, ages: [],
                 life: Array.new(LIFE_BUCKETS.size + 4, 0.0) }
      end
      rows.each do |row|
        frame = row[0].first
        site = sites[[class_name(row), frame ? "#{frame[0]}:#{frame[1]}" : "?"]]
        VALUES.each { |v| site[v] += row[VALUE_INDEX[v]] }
        site[:ages].concat(row[8])
        row[LIFE_INDEX].each_with_index { |x, i| site[:life][i] += x }
      end
      sites
    end

    # How the ranked sites' recorded samples lived: shares of their bytes
    # that died in the first GC after allocation, died later, or are still
    # alive (censored), what was promoted and what of it died, and the
    # mean life of the dead on the allocation clock.
    def report_lives(out, ranked)
      return if ranked.empty?
      n = LIFE_BUCKETS.size
      out.concat("\nLifetimes of the sites above (shares of their recorded bytes; alive ones are censored, not deaths):\n")
      out.concat(format("%4s %7s %7s %7s %10s %10s %11s  %-24s %s\n", "rank", "died@1st", "later", "alive", "promoted",
                      "prom.dead", "mean life", "class", "site"))
      ranked.each_with_index do |(key, h), i|
        life = h[:life]
        dead = life.first(n).sum
        recorded = dead + h[:inuse_space]
        share = ->(x) { recorded.zero? ? "-" : format("%.1f%%", 100.0 * x / recorded) }
        mean = dead.zero? ? "-" : bytes(life[n + 2] / dead)
        out.concat(format("%4d %7s %7s %7s %10s %10s %11s  %-24s %s\n", i + 1, share.(life[0]), share.(dead - life[0]),
                        share.(h[:inuse_space]), bytes(life[n]), bytes(life[n + 1]), mean, key[0], key[1]))
      end
    end

    # The live set at the peak of the live estimate (peak_totals), by site.
    def report_peak(out, top)
      peak = self.peak or return
      out.concat(format("\nPeak: estimated %s live (slots %s, malloc'd %s) at GC %d (%s), %.2f s after start, %d samples live:\n",
                      bytes(peak[:live_bytes]), bytes(peak[:live_slot_bytes]), bytes(peak[:live_malloc_bytes]), peak[:gc],
                      peak[:major] ? "major" : "minor", peak[:seconds], peak[:live_samples]))
      sites = by_place(peak_totals)
      total = sites.sum { |_, h| h[:inuse_space] }
      out.concat(format("%4s %10s %6s %10s  %-24s %s\n", "rank", "bytes", "share", "objects", "class", "site"))
      ranked = sites.sort_by { |key, h| [-h[:inuse_space], key] }
      ranked = ranked.first(top) if top < ranked.size
      ranked.each_with_index do |(key, h), i|
        out.concat(format("%4d %10s %5.1f%% %10d  %-24s %s\n", i + 1, bytes(h[:inuse_space]),
                        total.zero? ? 0.0 : 100.0 * h[:inuse_space] / total, h[:inuse_objects].round, key[0], key[1]))
      end
    end

    # With with_labels in use: the same totals grouped by label set.
    def report_labels(out, rows, by, top)
      groups = Hash.new(0.0)
      rows.each { |row| groups[row[9]] += row[VALUE_INDEX[by]] }
      return if groups.keys == [{}] || groups.empty?
      total = groups.values.sum
      out.concat(format("\nBy labels (%s):\n%4s %10s %6s  %s\n", by, "rank", by.to_s.end_with?("space") ? "bytes" : "objects",
                      "share", "labels"))
      groups.sort_by { |labels, v| [-v, labels.to_a] }.first(top).each_with_index do |(labels, v), i|
        shown = labels.empty? ? "(none)" : labels.map { |k, val| "#{k}=#{val}" }.join(" ")
        out.concat(format("%4d %10s %5.1f%%  %s\n", i + 1, by.to_s.end_with?("space") ? bytes(v) : v.round.to_s,
                        total.zero? ? 0.0 : 100.0 * v / total, shown))
      end
    end

    # The hops that name what holds an object: a retainer is the deepest
    # of them on a path (the root when there is none).
    RETAINER_KINDS = %i[global finalizer end_proc constant ivar class_variable local member].freeze

    # Prints the top retainers by retained sampled bytes (in use), each
    # with its shortest path from a root and the allocation sites of what
    # it holds.  One walk of the heap (retention_rows).
    def retention_report_impl(io = $stdout, top: 20, max_objects: nil)
      check_report_args(io, top)
      out = +""
      walk, rows = retention_rows(max_objects)
      groups = {}.compare_by_identity
      rows.each do |path, weight, (klass, where)|
        i = path.rindex.with_index { |h, j| j < path.size - 1 && RETAINER_KINDS.include?(h[:kind]) } || 0
        # (hops are made once per object for a walk: the same retainer is the same Hash;
        # samples with no path are one group of each kind)
        key = %i[cut unreachable].include?(path[0][:kind]) ? path[0][:kind] : path[i]
        g = (groups[key] ||= { path: path[0..i], bytes: 0.0, samples: 0, sites: Hash.new(0.0) })
        g[:bytes] += weight
        g[:samples] += 1
        g[:sites]["#{klass || '(hidden)'} at #{where}"] += weight
      end
      total = groups.sum { |_, g| g[:bytes] }
      out.concat(format("Retainers by retained sampled bytes: %d live samples, %s in use; walked %d objects in %.1f ms (%s)\n",
                      rows.size, bytes(total), walk[:objects], walk[:seconds] * 1000, bytes(walk[:bytes])))
      if walk[:cut]
        out.concat(format("(the walk stopped at its cap of %d objects: %d samples not reached have cut paths)\n",
                        walk[:max_objects], walk[:cut_paths]))
      end
      out.concat(format("(%d samples are not reachable from any root: garbage the next GC frees)\n", walk[:unreachable])) if walk[:unreachable] > 0
      out.concat(format("%4s %10s %6s %8s  %s\n", "rank", "retained", "share", "samples", "retainer"))
      ranked = groups.values.sort_by { |g| [-g[:bytes], g[:path].map { |h| h[:label] }] }.first(top)
      ranked.each_with_index do |g, i|
        out.concat(format("%4d %10s %5.1f%% %8d  %s\n", i + 1, bytes(g[:bytes]), total.zero? ? 0.0 : 100.0 * g[:bytes] / total,
                        g[:samples], g[:path].last[:label]))
        out.concat("       path: #{g[:path].map { |h| h[:label] }.join(' -> ')}\n")
        held = g[:sites].sort_by { |site, b| [-b, site] }
        shown = held.first(3).map { |site, b| "#{bytes(b)} #{site}" }
        shown << "#{held.size - 3} more sites" if held.size > 3
        out.concat("       holds: #{shown.join('; ')}\n")
      end
      out.concat("(no live samples: start the sampler, or widen its interval)\n") if rows.empty?
      [io, out, ranked.size]
    end

    def check_report_args(io, top)
      unless top.is_a?(Integer) && top >= 1
        raise ArgumentError, "top must be an Integer >= 1 (got #{top.inspect})"
      end
      return if io.respond_to?(:write)

      raise ArgumentError, "io must respond to write (got #{io.inspect})"
    end

    def check_value(value, name)
      return if VALUES.include?(value)
      raise ArgumentError, "#{name} must be one of #{VALUES.map(&:inspect).join(', ')} (got #{value.inspect})"
    end

    def class_name(row)
      return row[1] if row[1]
      return "(other)" if row[2].nil?
      "(#{row[2]}#{row[3] ? ":#{row[3]}" : ''})"
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

    # An IO (anything with #write) is written through at its position; a
    # String or Pathname names a file.
    def output(dest, name)
      return dest if !dest.is_a?(String) && dest.respond_to?(:write)
      return File.path(dest) if dest.is_a?(String) || dest.respond_to?(:to_path)
      raise ArgumentError, "#{name} must be a path (String, Pathname) or an IO (got #{dest.inspect})"
    end
  end
end
