# with_labels nests as Go's pprof.Do: the inner block's samples carry the
# outer labels merged with the inner ones (inner keys win), the outer set
# is back after the inner block (also when it raises), the block's value
# is returned, and threads and fibers started inside inherit the set.
require_relative "helper"

class TestLabelsNesting < Minitest::Test
  def alloc_here(tag)
    Array.new(200) { tag.dup }
  end

  def labels_at(tag)
    Sampler.samples.select { |s| s.frames.any? { |f| f[2].end_with?("#alloc_here") } && s.type == :T_STRING }
           .group_by { |s| s.labels }.keys
  end

  def test_nesting_and_inheritance
    Sampler.start(interval: 1, mode: :fixed, seed: 1)
    seen = {}
    grab = lambda do |name, &blk|
      Sampler.clear
      blk.call
      seen[name] = labels_at(name)
    end

    grab.call(:outer) { Sampler.with_labels(endpoint: "GET /a", tenant: :t1) { alloc_here("x") } }
    value = nil
    grab.call(:inner) do
      Sampler.with_labels(endpoint: "GET /a", tenant: :t1) do
        value = Sampler.with_labels("tenant" => "t2", job: "j") { alloc_here("y"); :block_value }
      end
    end
    grab.call(:after_inner) do
      Sampler.with_labels(endpoint: "GET /a") do
        Sampler.with_labels(job: "j") { raise "boom" } rescue nil
        alloc_here("z")
      end
    end
    grab.call(:thread) { Sampler.with_labels(endpoint: "t") { Thread.new { alloc_here("t") }.join } }
    grab.call(:fiber) { Sampler.with_labels(endpoint: "f") { Fiber.new { alloc_here("f") }.resume } }
    grab.call(:thread_nested) do
      Sampler.with_labels(endpoint: "t") { Thread.new { Sampler.with_labels(job: "n") { alloc_here("n") } }.join }
    end
    grab.call(:outside) { Sampler.with_labels(endpoint: "gone") { 1 }; alloc_here("o") }

    assert_equal :block_value, value
    assert_equal [{ "endpoint" => "GET /a", "tenant" => "t1" }], seen[:outer]
    assert_equal [{ "endpoint" => "GET /a", "job" => "j", "tenant" => "t2" }], seen[:inner]
    assert_equal [{ "endpoint" => "GET /a" }], seen[:after_inner]
    assert_equal [{ "endpoint" => "t" }], seen[:thread]
    assert_equal [{ "endpoint" => "f" }], seen[:fiber]
    assert_equal [{ "endpoint" => "t", "job" => "n" }], seen[:thread_nested]
    assert_equal [{}], seen[:outside]
  end
end
