# alloc_blocks.rb: allocation from one method on four lines, ten blocks in
# methods deep (about 35 control frames): the stack a framework gives, in
# miniature.  Each of the four lines is its own site, and the sites part
# after their first frame (Class#new, then the line), so a sample whose
# stack a recent site's is found by comparing with each recent site in
# turn (frames.c, match_pred), and every block in the compare is a block
# in a method (its method's entry one environment out).
#
#   ALLOC_BLOCKS_N   iterations of the four allocations (default 20_000)
N = Integer(ENV.fetch("ALLOC_BLOCKS_N", "20000"))

class AllocBlocks
  def level(n) = n.zero? ? alloc : [1].each { return level(n - 1) }

  def alloc
    i = 0
    while i < N
      Object.new
      Object.new
      Object.new
      Object.new
      i += 1
    end
  end
end

AllocBlocks.new.level(10)
