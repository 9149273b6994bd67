# frozen_string_literal: true
#
# dhat_expect.rb: what the library reports about the top program points
# of a DHAT file it wrote, for check-dhat.mjs and check-firefox.mjs.
#
#   DhatExpect.write(ObjectSpace::AllocationSampler, "x.dhat.json", "x.dhat-expect.json")
#
# A point is a site's frames as text, what it allocates (class, or type
# for hidden objects, or malloc) and its labels, as dhat_api.c makes
# them; the figures come from site_totals / peak_totals (what `report`
# prints) and from the samples' lives (Sample#age_bytes), never from the
# DHAT file (whose tuth alone is read: the threshold of "short-lived").
require "json"

module DhatExpect
  module_function

  # A frame as the DHAT file names it, without its address (a synthetic
  # frame, <boot>, <GC>, <no Ruby frame>, names itself as its path).
  def frame_text((path, line, label))
    where = if path.nil? then "in C"
            elsif path == label then "no Ruby stack"
            elsif line.positive? then "#{path}:#{line}"
            else path
            end
    "#{label} (#{where})"
  end

  # What a site allocates: its innermost frame.
  def kind_text(klass, type, imemo)
    return "malloc (malloc'd block)" if type == :malloc
    "#{klass || (imemo ? "(#{type}:#{imemo})" : "(#{type})")} (object slot, #{type})"
  end

  # A program point: its frames' text, innermost first.
  def point_key(frames, klass, type, imemo, labels)
    key = [kind_text(klass, type, imemo)] + frames.map { |f| frame_text(f) }
    key << "#{labels.map { |k, v| "#{k}=#{v}" }.join(' ')} (labels)" unless labels.empty?
    key
  end

  # The library's figures by program point: bytes and blocks allocated
  # and in use now (site_totals), bytes live at the peak (peak_totals),
  # and objects x bytes lived of the samples kept (Sample#age_bytes; the
  # live ones until the clock reads `now`: the file's te, as the reads
  # since moved it).  <other sites> is left out.
  def points(sampler, now)
    points = Hash.new { |h, k| h[k] = { bytes: 0.0, blocks: 0.0, gmax: 0.0, objtime: 0.0, end: 0.0, end_blocks: 0.0 } }
    sampler.send(:site_totals).each do |frames, klass, type, imemo, alloc_space, alloc_objects, inuse_space, inuse_objects, _,
                                        labels, _life|
      next if type.nil?
      pt = points[point_key(frames, klass, type, imemo, labels)]
      pt[:bytes] += alloc_space
      pt[:blocks] += alloc_objects
      pt[:end] += inuse_space
      pt[:end_blocks] += inuse_objects
    end
    sampler.send(:peak_totals).each do |frames, klass, type, imemo, _, _, inuse_space, *, labels, _life|
      next if type.nil?
      points[point_key(frames, klass, type, imemo, labels)][:gmax] += inuse_space
    end
    sampler.each_sample do |s|
      key = point_key(s.frames, s.klass&.name, s.type, s.imemo_type, s.labels)
      lived = s.freed_bytes ? s.age_bytes : now - s.allocated_bytes
      points[key][:objtime] += s.weight / s.size * lived if points.key?(key)
    end
    points
  end

  def lifetime(pt) = pt[:blocks].zero? ? 0.0 : pt[:objtime] / pt[:blocks]

  # The top points of a DHAT file as the library reports them, written
  # as JSON to expect_path (and returned).
  def write(sampler, dhat, expect_path)
    file = JSON.parse(File.read(dhat))
    points = points(sampler, file["te"])
    stats = sampler.stats
    summary = ->((key, pt)) { { frames: key, bytes: pt[:bytes].round, blocks: pt[:blocks].round, gmax: pt[:gmax].round,
                                 avg_lifetime: lifetime(pt) } }
    total_blocks = points.sum { |_, pt| pt[:blocks] }
    # by what was allocated (the innermost frame): the Firefox Profiler's
    # inverted call tree starts there
    kinds = Hash.new { |h, k| h[k] = { bytes: 0.0, gmax: 0.0, points: 0 } }
    points.each do |key, pt|
      kind = kinds[key.first]
      kind[:bytes] += pt[:bytes]
      kind[:gmax] += pt[:gmax]
      kind[:points] += 1
    end
    short = points.select { |_, pt| lifetime(pt) <= file["tuth"] && pt[:blocks] >= 0.005 * total_blocks }
    expect = {
      complete: stats[:evicted].zero? && stats[:dropped].zero?,  # every sample's life is in the samples
      tuth: file["tuth"],
      top_total: summary.(points.max_by { |_, pt| pt[:bytes] }),
      top_gmax: summary.(points.max_by { |_, pt| pt[:gmax] }),
      top_short_lived: short.empty? ? nil : summary.(short.max_by { |_, pt| pt[:blocks] }),
      total_bytes: points.sum { |_, pt| pt[:bytes] }, points: points.size,
      kinds: kinds.transform_values { |k| { bytes: k[:bytes], gmax: k[:gmax], points: k[:points] } },
    }
    File.write(expect_path, JSON.pretty_generate(expect))
    expect
  end
end
